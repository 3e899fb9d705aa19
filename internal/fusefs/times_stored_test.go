package fusefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStoredTimesAreSeen: the times a user saw through the mount are the
// ones stored: after syncfs and a commit (a copy of the image then, as a
// crash would leave it) and after a remount (nothing cached in the kernel), every
// file shows the mtime, ctime and size it showed before. The writeback
// cache mode (the default) keeps them in the kernel and sends them with
// SETATTR; without it the daemon stamps them.
func TestStoredTimesAreSeen(t *testing.T) {
	for _, c := range cacheModes {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			img := newImage(t, 256<<20)
			tm := mountImage(t, img, c.o)
			steps := []func(){
				func() { must(t, os.WriteFile(tm.path("a"), []byte("written and closed"), 0o644)) },
				func() {
					f, err := os.Create(tm.path("b"))
					must(t, err)
					for i := range 3 {
						_, err := f.WriteAt([]byte("write"), int64(i)*70000)
						must(t, err)
						tick()
					}
					must(t, f.Sync())
					must(t, f.Close())
				},
				func() { must(t, os.Truncate(tm.path("a"), 2)) },
				func() { must(t, os.WriteFile(tm.path("c"), []byte("ccc"), 0o644)) },
				func() { must(t, os.Chmod(tm.path("c"), 0o600)) },
				func() {
					f, err := os.OpenFile(tm.path("b"), os.O_WRONLY|os.O_APPEND, 0)
					must(t, err)
					_, err = f.Write([]byte("appended"))
					must(t, err)
					must(t, f.Close())
				},
				func() { must(t, os.WriteFile(tm.path("d"), make([]byte, 200000), 0o644)) },
				func() { must(t, os.Rename(tm.path("d"), tm.path("e"))) },
			}
			for _, s := range steps {
				s()
				tick()
			}
			open, err := os.Create(tm.path("open")) // written, fsync'd, left open across the sync
			must(t, err)
			_, err = open.Write([]byte("still open"))
			must(t, err)
			tick()
			names := []string{"a", "b", "c", "e", "open"}
			seen := map[string]syscall.Stat_t{}
			for _, n := range names {
				seen[n] = stamp(t, tm.path(n))
			}
			compare := func(when, dir string) {
				t.Helper()
				for _, n := range names {
					got, want := stamp(t, filepath.Join(dir, n)), seen[n]
					if got.Mtim != want.Mtim || got.Ctim != want.Ctim || got.Size != want.Size {
						t.Errorf("%s: %s: mtime %v ctime %v size %d, seen mtime %v ctime %v size %d", when, n,
							got.Mtim, got.Ctim, got.Size, want.Mtim, want.Ctim, want.Size)
					}
				}
			}
			// The kernel writes an open file's pages back asynchronously:
			// only fsync waits until the daemon has them (and its times).
			must(t, open.Sync())
			d, err := os.Open(tm.dir)
			must(t, err)
			must(t, unix.Syncfs(int(d.Fd()))) // the kernel sends its dirty pages and times
			d.Close()
			must(t, tm.Sync()) // FUSE sends no SYNCFS: commit as BTRFS_IOC_SYNC would
			crash := filepath.Join(t.TempDir(), "crash.img")
			if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
			compare("through the mount after syncfs", tm.dir)
			must(t, open.Close())
			tm.unmount()
			compare("copy after syncfs", mountImage(t, crash, Options{ReadOnly: true}).dir)
			compare("after remount", mountImage(t, img, c.o).dir)
		})
	}
}

// TestIocSyncSendsKernelPages: in the writeback cache mode (the default)
// `btrfs filesystem sync` (BTRFS_IOC_SYNC) makes data durable that the
// kernel still held: written to a file left open, never fsync'd. A copy
// of the image right after the sync has it.
func TestIocSyncSendsKernelPages(t *testing.T) {
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{CommitInterval: time.Hour})
	f, err := os.Create(tm.path("open"))
	must(t, err)
	defer f.Close()
	want := []byte("in the kernel's page cache only")
	_, err = f.Write(want)
	must(t, err)
	d, err := os.Open(tm.path())
	must(t, err)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, d.Fd(), btrfsIocSync, 0)
	d.Close()
	if errno != 0 {
		t.Fatalf("BTRFS_IOC_SYNC: %v", errno)
	}
	crash := filepath.Join(t.TempDir(), "crash.img")
	if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	got, err := os.ReadFile(mountImage(t, crash, Options{ReadOnly: true}).path("open"))
	if err != nil || string(got) != string(want) {
		t.Errorf("after BTRFS_IOC_SYNC the image holds %q, %v; want %q", got, err, want)
	}
}
