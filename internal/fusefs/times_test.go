package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stamp is a stat of path, failing the test on error.
func stamp(t *testing.T, path string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// tick lets the clock pass the filesystems' timestamp granularity (the
// kernel's coarse clock ticks every few milliseconds).
func tick() { time.Sleep(25 * time.Millisecond) }

func changed(a, b syscall.Timespec) string {
	if a == b {
		return "kept"
	}
	return "changed"
}

// truncateReport truncates files of several sizes, through truncate(2),
// ftruncate(2) and open(O_TRUNC), with data still buffered or already
// fsync'd, and says which times changed and the sizes.
func truncateReport(t *testing.T, dir string) string {
	var b strings.Builder
	ops := []struct {
		name string
		do   func(p string, size int64) error
	}{
		{"truncate", func(p string, size int64) error { return os.Truncate(p, size) }},
		{"ftruncate", func(p string, size int64) error {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return f.Truncate(size)
		}},
		{"O_TRUNC", func(p string, size int64) error {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return err
			}
			return f.Close()
		}},
	}
	for _, op := range ops {
		for _, synced := range []bool{false, true} {
			for _, size := range []int64{0, 5, 4096} {
				for _, initial := range []int{0, 5} {
					if op.name == "O_TRUNC" && size != 0 {
						continue
					}
					if op.name == "truncate" && size == 0 && initial == 0 {
						// FUSE sends this as it sends open(O_TRUNC) of an
						// empty file, which sets the times (see setattr)
						continue
					}
					p := filepath.Join(dir, fmt.Sprintf("%s-%v-%d-%d", op.name, synced, size, initial))
					f, err := os.Create(p)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := f.Write([]byte("hello")[:initial]); err != nil {
						t.Fatal(err)
					}
					if synced {
						f.Sync()
					}
					before := stamp(t, p)
					tick()
					err = op.do(p, size)
					after := stamp(t, p)
					f.Close()
					fmt.Fprintf(&b, "%s of %d bytes to %d (synced %v): err %v, size %d, mtime %s, ctime %s\n",
						op.name, initial, size, synced, err, after.Size, changed(before.Mtim, after.Mtim), changed(before.Ctim, after.Ctim))
				}
			}
		}
	}
	return b.String()
}

// TestTruncateTimesLikeKernel: generic/313. truncate(2) to another size
// sets mtime and ctime, also while the written data is still buffered
// (the size the caller saw counts, not the size on disk); ftruncate and
// O_TRUNC set them as the kernel's btrfs does.
func TestTruncateTimesLikeKernel(t *testing.T) {
	sideBySide(t, "", Options{}, truncateReport)
}
