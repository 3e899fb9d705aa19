package gobtrfs_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// within runs fn and fails the test if it does not return within d: a
// regression (a walker looping on a crafted image) fails instead of hanging.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not end within %v", what, d)
	}
}

// walkErrors walks the whole FS with fs.WalkDir, reading every file
// (bounded), and returns every error and every path visited.
func walkErrors(fsys *gobtrfs.FS) (errs []error, paths []string) {
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		paths = append(paths, p)
		if d.Type().IsRegular() {
			f, err := fsys.Open(p)
			if err != nil {
				errs = append(errs, err)
				return nil
			}
			if _, err := io.CopyN(io.Discard, f, 1<<20); err != nil && err != io.EOF {
				errs = append(errs, err)
			}
			f.Close()
		}
		return nil
	})
	return errs, paths
}

// TestHostileSelfPointer: a key pointer of the FS tree's root node points at
// the node itself (valid checksum and generation). Walking the library FS
// ends promptly with an error naming the tree and the block.
func TestHostileSelfPointer(t *testing.T) {
	b := hostile.Build(t)
	img, root := hostile.SelfPointer(t, b)
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	var errs []error
	within(t, 30*time.Second, "WalkDir", func() { errs, _ = walkErrors(fsys) })
	if len(errs) == 0 {
		t.Fatal("walk of an image with a self-pointing node found no error")
	}
	msg := errs[0].Error()
	t.Logf("%d errors, first: %s", len(errs), msg)
	for _, want := range []string{fmt.Sprint(uint64(root)), "FS_TREE", "level"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if !errors.Is(errs[0], gobtrfs.ErrCorrupt) {
		t.Errorf("error is not ErrCorrupt: %v", errs[0])
	}
}

// TestHostileDirLoop: the directory entry a/b/c is made to point at a/b
// itself, or at the root. WalkDir ends promptly, visits a/b once, and the
// looping entry gives an error naming the directory, the name and the
// target inode.
func TestHostileDirLoop(t *testing.T) {
	b := hostile.Build(t)
	for _, toRoot := range []bool{false, true} {
		t.Run(map[bool]string{false: "self", true: "root"}[toRoot], func(t *testing.T) {
			img := hostile.DirLoop(t, b, toRoot)
			var warnings []string
			fsys, err := gobtrfs.Open(img, &gobtrfs.Options{Warn: func(s string) { warnings = append(warnings, s) }})
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			var errs []error
			var paths []string
			within(t, 30*time.Second, "WalkDir", func() { errs, paths = walkErrors(fsys) })
			if len(paths) > 2000 {
				t.Fatalf("walk visited %d paths (loop)", len(paths))
			}
			var loopErr error
			for _, err := range errs {
				if strings.Contains(err.Error(), `"c"`) {
					loopErr = err
				}
			}
			if loopErr == nil {
				t.Fatalf("no error for the looping entry a/b/c; errors %v", errs)
			}
			t.Logf("error: %v", loopErr)
			target := b.Ino["a/b"]
			if toRoot {
				target = b.Ino["."]
			}
			for _, want := range []string{fmt.Sprintf("dir %d", b.Ino["a/b"]), fmt.Sprintf("-> %d", target)} {
				if !strings.Contains(loopErr.Error(), want) {
					t.Errorf("error %q does not name %q", loopErr, want)
				}
			}
			if !errors.Is(loopErr, gobtrfs.ErrCorrupt) {
				t.Errorf("not ErrCorrupt: %v", loopErr)
			}
			// a direct lookup through the entry fails the same way
			if _, err := fsys.ReadDir("a/b/c"); err == nil || !errors.Is(err, gobtrfs.ErrCorrupt) {
				t.Errorf("ReadDir(a/b/c) = %v, want ErrCorrupt", err)
			}
			if _, err := fsys.Stat("a/b/c/c/c/c"); err == nil {
				t.Errorf("Stat through the loop succeeded")
			}
			// the rest of the tree is intact
			if _, err := fsys.ReadFile("many/f017"); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestHostileBadNames: DIR_INDEX entries with '/', NUL or ".." as names
// are skipped with a warning naming the directory and the name; their
// siblings are listed.
func TestHostileBadNames(t *testing.T) {
	b := hostile.Build(t)
	var warnings []string
	fsys, err := gobtrfs.Open(hostile.BadNames(t, b), &gobtrfs.Options{Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	names := listNames(t, fsys, "list")
	if !slices.Equal(names, hostile.ListGood) {
		t.Errorf("list: %q, want %q", names, hostile.ListGood)
	}
	all := strings.Join(warnings, "\n")
	t.Logf("warnings:\n%s", all)
	for _, w := range []string{fmt.Sprintf("dir %d", b.Ino["list"]), `"sl/sh"`, `"nu\x00l"`, `".."`} {
		if !strings.Contains(all, w) {
			t.Errorf("no warning naming %s", w)
		}
	}
}

// TestHostileMalformedDirItem: a DIR_INDEX whose name length runs past
// its item, or whose type is invalid. The kernel's tree-checker rules
// reject the whole leaf that holds it: the directory is still listed
// without that leaf, with an error naming the block; in a directory of one
// leaf nothing malformed is listed.
func TestHostileMalformedDirItem(t *testing.T) {
	b := hostile.Build(t)
	for _, c := range []struct{ name, img string }{
		{"many/f300", hostile.BadNameLen(t, b, "many/f300")},
		{"many/f301", hostile.BadType(t, b, "many/f301")},
		{"list/bad-len", hostile.BadNameLen(t, b, "list/bad-len")},
		{"list/good2", hostile.BadType(t, b, "list/good2")},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys, err := gobtrfs.Open(c.img, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			dir, name := path.Split(c.name)
			es, err := fsys.ReadDir(path.Clean(dir))
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			t.Logf("%d entries, error %v", len(names), err)
			if slices.Contains(names, name) {
				t.Errorf("malformed entry %q listed", name)
			}
			if err == nil || !errors.Is(err, gobtrfs.ErrCorrupt) || !strings.Contains(err.Error(), "dir item") {
				t.Errorf("error %v: want ErrCorrupt naming the dir item", err)
			}
			if dir == "many/" && (len(names) < hostile.ManyFiles/2 || !slices.Contains(names, "f000") ||
				!slices.Contains(names, fmt.Sprintf("f%03d", hostile.ManyFiles-1))) {
				t.Errorf("one bad leaf hid the rest of many/: %d entries listed", len(names))
			}
		})
	}
}

func listNames(t *testing.T, fsys *gobtrfs.FS, dir string) []string {
	t.Helper()
	es, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestHostileHugeSize: a file whose i_size is 2^62 with one 4 KiB extent.
// Reads past the extent are holes served in O(1) per call, SEEK_DATA past
// the last extent is ENXIO at once, SEEK_HOLE finds the end of the extent.
func TestHostileHugeSize(t *testing.T) {
	b := hostile.Build(t)
	img := hostile.HugeSize(t, b)
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	f, err := fsys.OpenFile("sparse")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	within(t, 30*time.Second, "reads and seeks", func() {
		if st, _ := f.Stat(); st.Size() != 1<<62 {
			t.Errorf("size %d", st.Size())
		}
		buf := make([]byte, 1<<20)
		for _, off := range []int64{0, 1 << 20, 1 << 40, 1<<62 - 4096} {
			n, err := f.ReadAt(buf, off)
			if n == 0 || err != nil && err != io.EOF {
				t.Errorf("ReadAt %d: %d, %v", off, n, err)
			}
			if off > 0 && slices.ContainsFunc(buf[:n], func(c byte) bool { return c != 0 }) {
				t.Errorf("ReadAt %d: hole not zero", off)
			}
		}
		if _, err := f.ReadAt(buf, 1<<62); err != io.EOF {
			t.Errorf("ReadAt at EOF: %v", err)
		}
		if off, err := f.SeekData(4096); !errors.Is(err, syscall.ENXIO) {
			t.Errorf("SeekData past the last extent = %d, %v; want ENXIO", off, err)
		}
		if off, err := f.SeekData(1 << 61); !errors.Is(err, syscall.ENXIO) {
			t.Errorf("SeekData(2^61) = %d, %v; want ENXIO", off, err)
		}
		if off, err := f.SeekHole(0); err != nil || off != 4096 {
			t.Errorf("SeekHole(0) = %d, %v; want 4096", off, err)
		}
		if off, err := f.Seek(1<<62-10, io.SeekStart); err != nil || off != 1<<62-10 {
			t.Errorf("Seek = %d, %v", off, err)
		}
		n, err := io.Copy(io.Discard, f)
		if n != 10 || err != nil {
			t.Errorf("read of the last 10 bytes: %d, %v", n, err)
		}
		// whole-file reads are the caller's to bound; a bounded one is fast
		f.Seek(0, io.SeekStart)
		if n, err := io.CopyN(io.Discard, f, 64<<20); n != 64<<20 || err != nil {
			t.Errorf("CopyN: %d, %v", n, err)
		}
	})
}

// TestHostileDirLoopRW: the read-write library's path walker enters a
// directory only through its one link, so RemoveAll of a looped tree ends
// with an error naming the entry instead of recursing for ever.
func TestHostileDirLoopRW(t *testing.T) {
	b := hostile.Build(t)
	for _, toRoot := range []bool{false, true} {
		t.Run(map[bool]string{false: "self", true: "root"}[toRoot], func(t *testing.T) {
			img := hostile.DirLoop(t, b, toRoot)
			w, err := gobtrfs.OpenRW(img, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var rerr error
			within(t, 30*time.Second, "RemoveAll", func() { rerr = w.RemoveAll("/a") })
			if rerr == nil || !errors.Is(rerr, gobtrfs.ErrCorrupt) || !strings.Contains(rerr.Error(), `"c"`) {
				t.Errorf("RemoveAll of a looped tree: %v; want a corruption error naming entry \"c\"", rerr)
			}
		})
	}
}
