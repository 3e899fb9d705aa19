package fusefs

import (
	"fmt"
	"os"
	"sort"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
)

// TestSyncVisitsOnlyDirty is seed 002 through the mount: with 100,000
// clean cached inodes (files written, synced, then looked up) and 10 dirty
// ones, a sync visits the 10 on the writeback list, never the 100,000.
// Without the kernel's writeback cache, so that the dirty data is on the
// daemon's list when the sync comes.
func TestSyncVisitsOnlyDirty(t *testing.T) {
	needFuse(t)
	const dirty = 10
	clean := 100000
	if testing.Short() {
		clean = 20000
	}
	// the clean files are made with the library (a minute and a half
	// through the mount); the mount then looks each one up. 8 GiB (sparse):
	// its metadata chunk keeps room, so that the metadata held for the
	// dirty files does not have them written back at once (the kernel
	// would overcommit: see the closing note of 2026-12-06)
	img := newImage(t, 8<<30)
	w, err := gobtrfs.OpenRW(img, nil)
	must(t, err)
	must(t, w.Mkdir("/many", 0o755))
	for i := 0; i < clean; i++ {
		must(t, w.WriteFile(fmt.Sprintf("/many/f%d", i), []byte{'x'}, 0o644))
	}
	must(t, w.Close())
	tm := mountImage(t, img, Options{CommitInterval: time.Hour, NoWritebackCache: true})
	for i := 0; i < clean; i++ { // look every one up: the kernel and we cache them
		if _, err := os.Lstat(tm.path("many", fmt.Sprintf("f%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	var open []*os.File
	for i := 0; i < dirty; i++ {
		f, err := os.Create(tm.path(fmt.Sprintf("dirty%d", i)))
		must(t, err)
		_, err = f.Write([]byte("buffered, not written back"))
		must(t, err)
		open = append(open, f)
	}
	before := tm.CacheStats()
	// `btrfs filesystem sync MNT`: BTRFS_IOC_SYNC on the mount's root
	d, err := os.Open(tm.path())
	must(t, err)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, d.Fd(), btrfsIocSync, 0)
	d.Close()
	if errno != 0 {
		t.Fatalf("BTRFS_IOC_SYNC: %v", errno)
	}
	st := tm.CacheStats()
	t.Logf("before sync: %+v", before)
	t.Logf("after sync:  %+v", st)
	if st.CachedInodes < clean {
		t.Errorf("only %d cached inodes, want >= %d (the test needs them cached)", st.CachedInodes, clean)
	}
	if before.DirtyInodes != dirty {
		t.Errorf("%d inodes on the writeback list before sync, want %d", before.DirtyInodes, dirty)
	}
	if st.SyncVisited != dirty {
		t.Errorf("sync visited %d inodes, want %d (not the %d clean ones)", st.SyncVisited, dirty, st.CachedInodes)
	}
	if st.DirtyInodes != 0 || st.ListDels-before.ListDels != dirty {
		t.Errorf("after sync: %d still dirty, %d cleared", st.DirtyInodes, st.ListDels-before.ListDels)
	}
	for _, f := range open {
		f.Close()
	}
	checkReaddirOffsets(t, tm.path("many"), clean)
	finish(t, tm, img)
}

// checkReaddirOffsets reads a large directory with small getdents buffers,
// seeking back to saved offsets now and then: every name comes exactly
// once, and offsets are DIR_INDEX+1, increasing.
func checkReaddirOffsets(t *testing.T, dir string, n int) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(fd)
	seen := map[string]int{}
	buf := make([]byte, 1024)
	var saved []int64
	var lastOff uint64
	for round := 0; ; round++ {
		k, err := unix.Getdents(fd, buf)
		must(t, err)
		if k == 0 {
			break
		}
		for b := buf[:k]; len(b) > 0; {
			de := (*unix.Dirent)(unsafe.Pointer(&b[0]))
			name := unix.ByteSliceToString((*[256]byte)(unsafe.Pointer(&de.Name[0]))[:])
			if uint64(de.Off) <= lastOff {
				t.Fatalf("offset %d after %d: not increasing", de.Off, lastOff)
			}
			lastOff = uint64(de.Off)
			seen[name]++
			b = b[de.Reclen:]
		}
		if round%50 == 7 {
			// telldir/seekdir: come back to where we are after a detour
			here, err := unix.Seek(fd, 0, 1)
			must(t, err)
			saved = append(saved, here)
			_, err = unix.Seek(fd, 0, 0)
			must(t, err)
			_, err = unix.Getdents(fd, buf)
			must(t, err)
			_, err = unix.Seek(fd, here, 0)
			must(t, err)
		}
	}
	var dups []string
	for name, c := range seen {
		if c != 1 {
			dups = append(dups, fmt.Sprintf("%s x%d", name, c))
		}
	}
	sort.Strings(dups)
	if len(seen) != n+2 || len(dups) > 0 {
		t.Errorf("readdir of %d entries: saw %d names, repeated %v", n, len(seen)-2, dups)
	}
	if len(saved) == 0 {
		t.Errorf("no seekdir exercised")
	}
}
