package fusefs

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// TestRed2ReservationsComeBack: several writers race to fill the
// filesystem with buffered writes, truncating and unlinking files whose
// bytes are still buffered; once every file is deleted and synced, the
// mount holds no data space and no metadata (its pools and fsops'
// counters are zero), and a new file takes as much as on the fresh
// filesystem.
func TestRed2ReservationsComeBack(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed)", seed)
	for _, c := range []struct {
		name string
		o    Options
	}{{"no_writeback_cache", Options{NoWritebackCache: true}}, {"writeback_cache", Options{}}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 192<<20)
			tm := mountImage(t, img, c.o)
			fresh := red2FillData(t, tm, "fresh")
			must(t, os.Remove(tm.path("fresh")))
			must(t, tm.Sync())
			var wg sync.WaitGroup
			var mu sync.Mutex
			var names []string
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(seed + int64(g)))
					fails := 0
					for i := 0; fails < 8 && i < 400; i++ {
						name := fmt.Sprintf("g%d-%03d", g, i)
						f, err := os.Create(tm.path(name))
						if err != nil {
							fails++
							continue
						}
						size := rng.Intn(3<<20) + 1
						buf := make([]byte, 4096+rng.Intn(60000))
						rng.Read(buf)
						for off := 0; off < size; off += len(buf) {
							at := int64(off)
							if rng.Intn(4) == 0 {
								at = int64(rng.Intn(size))
							}
							if _, err := f.WriteAt(buf, at); err != nil {
								fails++
								break
							}
						}
						switch rng.Intn(6) {
						case 0:
							f.Truncate(int64(rng.Intn(size)))
						case 1:
							os.Remove(tm.path(name))
						case 2:
							f.Sync()
						}
						f.Close()
						mu.Lock()
						names = append(names, name)
						mu.Unlock()
					}
				}(g)
			}
			wg.Wait()
			for _, n := range names {
				os.Remove(tm.path(n))
			}
			must(t, tm.Sync())
			r := tm.m.rw
			// the releases of the last closes come after close(2)
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) && (r.rsv.Load() != 0 || r.meta.Load() != 0) {
				time.Sleep(50 * time.Millisecond)
				must(t, tm.Sync())
			}
			st := r.ops.Stats()
			if r.rsv.Load() != 0 || r.meta.Load() != 0 || st.DataReserved != 0 || r.ops.MetaHeld() != 0 {
				t.Errorf("with nothing buffered: the mount holds %d bytes of data space and %d of metadata; fsops counts %d and %d",
					r.rsv.Load(), r.meta.Load(), st.DataReserved, r.ops.MetaHeld())
			}
			again := red2FillData(t, tm, "again")
			t.Logf("fresh filesystem took %d MiB, after the race and the deletes %d MiB", fresh, again)
			if again < fresh-2 {
				t.Errorf("after deleting everything only %d MiB fit, %d on the fresh filesystem", again, fresh)
			}
			tm.unmount()
			checktest.Image(t, img)
		})
	}
}

// TestRed2MmapWhenFull: a shared mapping written near a full filesystem
// (the helper process writes 8 MiB into a sparse 16 MiB file with 2 MiB
// free, then msync): msync succeeds only with the bytes stored, and the
// mount shows what is on disk, in both cache modes, also while another
// open holds the file (the kernel kept the refused pages: wbfail.go).
func TestRed2MmapWhenFull(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name string
		o    Options
	}{{"no_writeback_cache", Options{NoWritebackCache: true}}, {"writeback_cache", Options{}}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 192<<20)
			tm := mountImage(t, img, c.o)
			must(t, os.WriteFile(tm.path("m"), nil, 0o644))
			must(t, os.Truncate(tm.path("m"), 16<<20))
			mib := red2FillData(t, tm, "fill")
			must(t, os.Truncate(tm.path("fill"), int64(mib-2)<<20))
			must(t, tm.Sync())
			data := make([]byte, 8<<20)
			rand.New(rand.NewSource(5)).Read(data)
			keep, err := os.Open(tm.path("m")) // open meanwhile
			must(t, err)
			_, merr := mmapRun("write", tm.path("m"), 16<<20, 4096, data)
			t.Logf("mmap write of 8 MiB with 2 MiB free: %v", merr)
			// The kernel drops the refused pages on the daemon's notify,
			// which waits for the end of their writeback, as msync does:
			// a read in the instant after msync returned may still find
			// them (the daemon cannot refuse a store to a mapping at the
			// fault, as kernel btrfs does in page_mkwrite).
			time.Sleep(100 * time.Millisecond)
			shownOpen := make([]byte, 16<<20)
			k, _ := keep.ReadAt(shownOpen, 0)
			shownOpen = shownOpen[:k]
			keep.Close()
			time.Sleep(100 * time.Millisecond) // the RELEASE
			shown, err := os.ReadFile(tm.path("m"))
			must(t, err)
			if msgs := tm.logBuf.String(); msgs != "" {
				t.Logf("daemon said:\n%s", firstLines(msgs, 6))
			}
			tm.unmount()
			fsys, err := gobtrfs.Open(img, nil)
			must(t, err)
			got, err := fsys.ReadFile("m")
			fsys.Close()
			must(t, err)
			if !bytes.Equal(shown, got) {
				t.Errorf("m: the mount showed %d bytes, %d on disk, %d differ", len(shown), len(got), red2Diff(shown, got))
			}
			if !bytes.Equal(shownOpen, got) {
				t.Errorf("while another open held it, m showed %d bytes not on disk (a refused writeback's pages stayed in the kernel's cache)", red2Diff(shownOpen, got))
			}
			if merr == nil && !bytes.Equal(got[4096:4096+len(data)], data) {
				t.Errorf("msync succeeded, the bytes are not on disk")
			}
			checktest.Image(t, img)
		})
	}
}

// red2Diff counts the bytes where a and b differ (the longer one's tail too).
func red2Diff(a, b []byte) int {
	n := max(len(a), len(b)) - min(len(a), len(b))
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// TestRed2SmallFilesKeepSpace: 3000 small files written without fsync on
// a 1 GiB filesystem. The metadata held for their writeback (2 items of
// 256 KiB each, the worst case) is far more than they use: before the
// pool was bounded to half the free metadata, other operations short of
// room added metadata chunks for it until the data had no device space
// left, and a write failed with ENOSPC after 15 MB.
func TestRed2SmallFilesKeepSpace(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name string
		o    Options
	}{{"no_writeback_cache", Options{NoWritebackCache: true}}, {"writeback_cache", Options{}}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 1<<30)
			tm := mountImage(t, img, c.o)
			b := bytes.Repeat([]byte{0x42}, 6000)
			for i := 0; i < 3000; i++ {
				if err := os.WriteFile(tm.path(fmt.Sprintf("s%05d", i)), b, 0o644); err != nil {
					t.Fatalf("small file %d: %v", i, err)
				}
			}
			must(t, tm.Sync())
			if _, free, _ := tm.m.rw.ops.Space(); free < 700<<20 {
				t.Errorf("after 18 MB of small files, %d MiB free for data", free>>20)
			}
			finish(t, tm, img)
		})
	}
}

// TestRed2UninlineWhenFull: a small file whose data is inline grows past
// what an inline extent holds when the data space has room for the new
// sector only: its writeback also rewrites the inline bytes as a regular
// extent (a sector more than the write touched). The write(2) is refused,
// or its bytes and the old ones are on disk after fsync.
func TestRed2UninlineWhenFull(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name string
		o    Options
		free int // sectors free for the write
	}{{"no_writeback_cache", Options{NoWritebackCache: true}, 1}, {"writeback_cache", Options{}, 1},
		{"no_writeback_cache_2", Options{NoWritebackCache: true}, 2}, {"writeback_cache_2", Options{}, 2}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 192<<20)
			tm := mountImage(t, img, c.o)
			head := bytes.Repeat([]byte("inline!"), 14)
			must(t, os.WriteFile(tm.path("inl"), head, 0o644))
			mib := red2FillData(t, tm, "fill")
			must(t, os.Truncate(tm.path("fill"), int64(mib-1)<<20))
			must(t, tm.Sync())
			// the last sectors, one file each
			n := 0
			for ; n < 10000; n++ {
				f, err := os.Create(tm.path(fmt.Sprintf("s%05d", n)))
				if err != nil {
					break
				}
				_, werr := f.Write(bytes.Repeat([]byte{0x11}, 4096))
				serr := f.Sync()
				f.Close()
				if werr != nil || serr != nil {
					must(t, os.Remove(tm.path(fmt.Sprintf("s%05d", n))))
					break
				}
			}
			t.Logf("%d sectors in files of their own", n)
			for i := 0; i < c.free; i++ {
				must(t, os.Remove(tm.path(fmt.Sprintf("s%05d", i))))
			}
			must(t, tm.Sync())
			f, err := os.OpenFile(tm.path("inl"), os.O_WRONLY, 0)
			must(t, err)
			tail := bytes.Repeat([]byte{0x22}, 4096)
			_, werr := f.WriteAt(tail, 8192)
			serr := f.Sync()
			f.Close()
			t.Logf("write: %v, fsync: %v", werr, serr)
			if werr == nil && serr != nil && c.o.NoWritebackCache {
				t.Errorf("write(2) took 4 KiB, then fsync: %v", serr)
			}
			shown, err := os.ReadFile(tm.path("inl"))
			must(t, err)
			tm.unmount()
			fsys, err := gobtrfs.Open(img, nil)
			must(t, err)
			got, err := fsys.ReadFile("inl")
			fsys.Close()
			must(t, err)
			if !bytes.Equal(shown, got) {
				t.Errorf("inl: the mount showed %d bytes, %d on disk", len(shown), len(got))
			}
			if !bytes.HasPrefix(got, head) {
				t.Errorf("inl: its first bytes are gone (%d bytes on disk)", len(got))
			}
			if werr == nil && serr == nil && (len(got) != 12288 || !bytes.Equal(got[8192:], tail) ||
				!bytes.Equal(got[len(head):8192], make([]byte, 8192-len(head)))) {
				t.Errorf("inl: fsync'd, but %d bytes on disk, not those written", len(got))
			}
			if c.free == 2 && (werr != nil || serr != nil) {
				t.Errorf("with two sectors free: write %v, fsync %v", werr, serr)
			}
			checktest.Image(t, img)
		})
	}
}

// TestRed2RacingWritersKeepFsynced: four writers race to fill the
// filesystem, each file written at random offsets, then fsync'd; every
// file whose writes and fsync all succeeded reads back as written through
// the mount and from the image after the unmount, in both cache modes.
func TestRed2RacingWritersKeepFsynced(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed)", seed)
	for _, c := range []struct {
		name string
		o    Options
	}{{"no_writeback_cache", Options{NoWritebackCache: true}}, {"writeback_cache", Options{}}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 160<<20)
			tm := mountImage(t, img, c.o)
			var wg sync.WaitGroup
			var mu sync.Mutex
			model := map[string][]byte{}
			for g := 0; g < 4; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					rng := rand.New(rand.NewSource(seed + int64(g)))
					fails := 0
					for i := 0; fails < 6 && i < 300; i++ {
						name := fmt.Sprintf("g%d-%03d", g, i)
						f, err := os.Create(tm.path(name))
						if err != nil {
							fails++
							continue
						}
						size := rng.Intn(2<<20) + 1
						content := make([]byte, size)
						ok := true
						for k := 0; k < 8 && ok; k++ {
							at := rng.Intn(size)
							n := min(size-at, 1+rng.Intn(300000))
							rng.Read(content[at : at+n])
							_, err := f.WriteAt(content[at:at+n], int64(at))
							ok = err == nil
						}
						if ok {
							_, err := f.WriteAt(content[size-1:], int64(size-1)) // the size
							ok = err == nil && f.Sync() == nil
						}
						f.Close()
						if !ok {
							fails++
							os.Remove(tm.path(name))
							continue
						}
						mu.Lock()
						model[name] = content
						mu.Unlock()
					}
				}(g)
			}
			wg.Wait()
			t.Logf("%d files written and fsync'd", len(model))
			check := func(who string, read func(string) ([]byte, error)) {
				bad := 0
				for name, want := range model {
					got, err := read(name)
					if err != nil || !bytes.Equal(got, want) {
						if bad++; bad <= 3 {
							t.Errorf("%s: %s: %d bytes (%v), %d written and fsync'd, %d differ", who, name, len(got), err, len(want), red2Diff(got, want))
						}
					}
				}
			}
			check("mount", func(n string) ([]byte, error) { return os.ReadFile(tm.path(n)) })
			tm.unmount()
			fsys, err := gobtrfs.Open(img, nil)
			must(t, err)
			check("image", fsys.ReadFile)
			fsys.Close()
			checktest.Image(t, img)
		})
	}
}

// TestRed2NocowOverwriteWhenFull: a NODATACOW file (chattr +C) written
// and fsync'd, then the filesystem filled: overwriting its bytes goes in
// place and needs no data space, so the buffered overwrite succeeds at
// full (as on kernel btrfs), its fsync too, and the bytes are on disk.
func TestRed2NocowOverwriteWhenFull(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name string
		o    Options
	}{{"no_writeback_cache", Options{NoWritebackCache: true}}, {"writeback_cache", Options{}}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 192<<20)
			tm := mountImage(t, img, c.o)
			fd, err := unix.Open(tm.path("nocow"), unix.O_CREAT|unix.O_RDWR, 0o644)
			must(t, err)
			must(t, unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, 0x00800000)) // FS_NOCOW_FL
			old := bytes.Repeat([]byte{0x0c}, 4<<20)
			_, err = unix.Pwrite(fd, old, 0)
			must(t, err)
			must(t, unix.Fsync(fd))
			unix.Close(fd)
			red2FillData(t, tm, "fill")
			must(t, tm.Sync())
			f, err := os.OpenFile(tm.path("nocow"), os.O_WRONLY, 0)
			must(t, err)
			want := make([]byte, 4<<20)
			rand.New(rand.NewSource(11)).Read(want)
			for off := 0; off < len(want); off += 64 << 10 {
				if _, err := f.WriteAt(want[off:off+64<<10], int64(off)); err != nil {
					t.Fatalf("overwrite of a NODATACOW file at %d with the filesystem full: %v", off, err)
				}
			}
			if err := f.Sync(); err != nil {
				t.Fatalf("fsync of the in-place overwrite: %v", err)
			}
			f.Close()
			tm.unmount()
			fsys, err := gobtrfs.Open(img, nil)
			must(t, err)
			got, err := fsys.ReadFile("nocow")
			fsys.Close()
			must(t, err)
			if !bytes.Equal(got, want) {
				t.Errorf("nocow: %d bytes differ from those fsync'd", red2Diff(got, want))
			}
			checktest.Image(t, img)
		})
	}
}
