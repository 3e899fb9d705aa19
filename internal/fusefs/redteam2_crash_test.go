package fusefs

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestRed2CrashNearFull: small files (inline and regular) and xattrs
// written and fsync'd while the data, then the metadata, run out; a copy
// of the image taken while mounted (a crash) replays, on the kernel and
// on our mount, to every file whose fsync succeeded, with its bytes, and
// checks clean.
func TestRed2CrashNearFull(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name string
		o    Options
		meta bool // the metadata runs out first
	}{{"no_writeback_cache", Options{NoWritebackCache: true}, false}, {"writeback_cache", Options{}, false},
		{"no_writeback_cache_meta", Options{NoWritebackCache: true}, true}, {"writeback_cache_meta", Options{}, true}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 160<<20)
			tm := mountImage(t, img, c.o)
			mib := red2FillData(t, tm, "fill")
			if !c.meta {
				must(t, os.Truncate(tm.path("fill"), int64(mib-6)<<20))
			} else {
				must(t, os.Truncate(tm.path("fill"), int64(mib-40)<<20))
				n, err := red2FillMeta(t, tm, "meta")
				t.Logf("%d xattrs of 12 KiB: %v", n, err)
				for i := 0; i < 300; i++ {
					must(t, unix.Removexattr(tm.path("meta"), fmt.Sprintf("user.red2.%06d", i)))
				}
			}
			must(t, tm.Sync())
			rng := rand.New(rand.NewSource(7))
			durable := map[string][]byte{}
			fails := 0
			for i := 0; i < 3000 && fails < 40; i++ {
				name := fmt.Sprintf("f%04d", i)
				size := []int{1500, 3000, 12288, 40000}[i%4]
				b := make([]byte, size)
				rng.Read(b)
				f, err := os.Create(tm.path(name))
				if err != nil {
					fails++
					continue
				}
				_, werr := f.Write(b)
				if werr == nil && i%3 == 0 {
					werr = unix.Fsetxattr(int(f.Fd()), "user.big", bytes.Repeat([]byte{byte(i)}, 3000), 0)
				}
				serr := f.Sync()
				f.Close()
				if werr != nil || serr != nil {
					fails++
					continue
				}
				durable[name] = b
			}
			t.Logf("%d files fsync'd, %d refused", len(durable), fails)
			crash := filepath.Join(t.TempDir(), "crash.img")
			if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			compare := func(who, dir string) {
				bad := 0
				for name, want := range durable {
					got, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil || !bytes.Equal(got, want) {
						if bad++; bad <= 3 {
							t.Errorf("%s: %s: %d bytes (%v), want the %d fsync'd", who, name, len(got), err, len(want))
						}
					}
				}
				if bad > 3 {
					t.Errorf("%s: %d files in all", who, bad)
				}
			}
			compare("mount", tm.dir)
			// deleting works at full, and the space comes back
			for name := range durable {
				if rng.Intn(2) == 0 {
					must(t, os.Remove(tm.path(name)))
					delete(durable, name)
				}
			}
			if c.meta {
				must(t, os.Remove(tm.path("meta")))
			}
			must(t, tm.Sync())
			must(t, os.WriteFile(tm.path("after"), bytes.Repeat([]byte{9}, 1<<20), 0o644))
			tm.unmount()
			checktest.Image(t, img)
			// the crash copy: our mount replays its log, then the kernel's
			// view of a second copy
			crash2 := filepath.Join(t.TempDir(), "crash2.img")
			if out, err := exec.Command("cp", "--sparse=always", crash, crash2).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			if canKernelMount() {
				dir := testutil.LoopMount(t, crash2, "")
				compare("kernel replay of the crash copy", dir)
				testutil.Unmount(t, dir)
				checktest.Image(t, crash2)
			}
			cm := mountImage(t, crash, Options{})
			compare("our replay of the crash copy", cm.dir)
			cm.unmount()
			checktest.Image(t, crash)
		})
	}
}
