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
	// every file is made and stamped first, then one tick, then every
	// truncate: one wait in all
	type pending struct {
		line   string
		p      string
		f      *os.File
		before syscall.Stat_t
		do     func() error
	}
	var todo []*pending
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
					do := op.do
					todo = append(todo, &pending{
						line: fmt.Sprintf("%s of %d bytes to %d (synced %v)", op.name, initial, size, synced),
						p:    p, f: f, before: stamp(t, p), do: func() error { return do(p, size) },
					})
				}
			}
		}
	}
	tick()
	for _, c := range todo {
		err := c.do()
		after := stamp(t, c.p)
		c.f.Close()
		fmt.Fprintf(&b, "%s: err %v, size %d, mtime %s, ctime %s\n", c.line, err, after.Size,
			changed(c.before.Mtim, after.Mtim), changed(c.before.Ctim, after.Ctim))
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

// atimeReport reads files and lists directories in dir and says after
// each step whether the atime changed (and that mtime and ctime did not).
func atimeReport(t *testing.T, dir string) string {
	var b strings.Builder
	d := filepath.Join(dir, "d")
	f := filepath.Join(d, "f")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, []byte("aaa\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step := func(name, path string, do func()) {
		before := stamp(t, path)
		tick()
		do()
		after := stamp(t, path)
		fmt.Fprintf(&b, "%s: atime %s, mtime %s, ctime %s\n", name,
			changed(before.Atim, after.Atim), changed(before.Mtim, after.Mtim), changed(before.Ctim, after.Ctim))
	}
	read := func() {
		if _, err := os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	list := func() {
		if _, err := os.ReadDir(d); err != nil {
			t.Fatal(err)
		}
	}
	step("first read", f, read)
	step("second read", f, read)
	step("dir after file read", d, read)
	step("first list", d, list)
	step("second list", d, list)
	if err := os.WriteFile(f, []byte("bbb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("read after write", f, read)
	step("read again", f, read)
	if err := os.WriteFile(filepath.Join(d, "g"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	step("list after create", d, list)
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(f, old, time.Now().Add(-72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	step("read of day-old atime", f, read)
	return b.String()
}

// TestAtimeLikeKernel: generic/003. relatime (default), noatime,
// strictatime and nodiratime move access times as on a kernel btrfs mount.
func TestAtimeLikeKernel(t *testing.T) {
	for _, c := range []struct {
		kopts string
		o     Options
	}{
		{"relatime", Options{}},
		{"noatime", Options{Atime: AtimeNever}},
		{"strictatime", Options{Atime: AtimeStrict}},
		{"nodiratime", Options{NoDiratime: true}},
	} {
		t.Run(c.kopts, func(t *testing.T) {
			t.Parallel() // most of the time is spent waiting for the clock
			sideBySide(t, c.kopts, c.o, atimeReport)
		})
	}
}

// TestAtimeRidesNextCommit: atime updates change the running transaction
// only (no commit per read, even under strictatime), and the next commit
// writes them.
func TestAtimeRidesNextCommit(t *testing.T) {
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{Atime: AtimeStrict})
	p := tm.path("f")
	if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tm.Sync(); err != nil {
		t.Fatal(err)
	}
	gen := tm.m.rw.ops.CommittedGeneration()
	var last syscall.Timespec
	for i := 0; i < 10; i++ {
		tick()
		if _, err := os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
		st := stamp(t, p)
		if st.Atim == last {
			t.Fatalf("read %d did not move the atime under strictatime", i)
		}
		last = st.Atim
	}
	if g := tm.m.rw.ops.CommittedGeneration(); g != gen {
		t.Errorf("10 reads committed %d times", g-gen)
	}
	tm.unmount()
	ro := mountImage(t, img, Options{ReadOnly: true})
	if st := stamp(t, ro.path("f")); st.Atim != last {
		t.Errorf("atime after remount %v, want %v", st.Atim, last)
	}
}
