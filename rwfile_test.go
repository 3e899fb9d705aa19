package gobtrfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// TestRWFile: RW.Create and RW.OpenFile give os.File-like files whose
// writes land in the image (read back through the file, RW.ReadFile, and
// after Close through Open), with os.OpenFile's flag rules.
func TestRWFile(t *testing.T) {
	img := newImage(t)
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.Create("/new")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for i := range 1000 { // many small writes through io.Writer
		fmt.Fprintf(f, "line %d\n", i)
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if _, err := f.WriteAt([]byte("LINE"), 0); err != nil {
		t.Fatal(err)
	}
	copy(want.Bytes(), "LINE")
	if pos, err := f.Seek(0, io.SeekEnd); err != nil || pos != int64(want.Len()) {
		t.Fatalf("Seek end: %d, %v; want %d", pos, err, want.Len())
	}
	if _, err := f.Seek(1<<20, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("far")); err != nil { // leaves a hole
		t.Fatal(err)
	}
	want.Write(make([]byte, 1<<20-want.Len()))
	want.WriteString("far")
	if hole, err := f.Seek(0, gobtrfs.SeekHole); err != nil || hole >= 1<<20 || hole < 4096 {
		t.Errorf("SeekHole: %d, %v; want the gap before 1 MiB", hole, err)
	}
	f.Seek(0, io.SeekStart)
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("read back through the file: %d bytes, %v; want %d", len(got), err, want.Len())
	}
	if fi, err := f.Stat(); err != nil || fi.Size() != int64(want.Len()) || fi.Name() != "new" {
		t.Errorf("Stat: %v, %v", fi, err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("x")); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Write after Close: %v, want fs.ErrClosed", err)
	}
	if b, err := w.ReadFile("/new"); err != nil || !bytes.Equal(b, want.Bytes()) {
		t.Errorf("RW.ReadFile: %d bytes, %v", len(b), err)
	}

	// flags
	if _, err := w.OpenFile("/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("O_EXCL on an existing file: %v", err)
	}
	if _, err := w.OpenFile("/missing", os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("open of a missing file: %v", err)
	}
	if _, err := w.OpenFile("/", os.O_RDWR, 0); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("directory opened for writing: %v", err)
	}
	ro, err := w.OpenFile("/hello", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Write([]byte("x")); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Write on O_RDONLY: %v, want EBADF", err)
	}
	ro.Close()
	a, err := w.OpenFile("/hello", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Write([]byte("more\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("x"), 0); err == nil {
		t.Errorf("WriteAt on O_APPEND succeeded")
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Read on O_WRONLY: %v, want EBADF", err)
	}
	a.Close()
	e, err := w.OpenFile("/excl", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	e.Write([]byte("e"))
	e.Close()
	tr, err := w.OpenFile("/excl", os.O_RDWR|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := tr.Stat(); fi.Size() != 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("after O_TRUNC: %v", fi)
	}
	tr.Close()

	// small Reads see changes made through other doors at once (the
	// read-ahead window follows the inode's version)
	rd, err := w.OpenFile("/new", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := make([]byte, 1)
	for i, change := range []func(){
		func() { w.WriteAt("/new", []byte("Z"), 1) },
		func() { w.Truncate("/new", 2) },
	} {
		if _, err := rd.Read(one); err != nil {
			t.Fatal(err)
		}
		change()
		n, err := rd.Read(one)
		if i == 0 && (n != 1 || one[0] != 'Z') {
			t.Errorf("Read after RW.WriteAt: %q, %v; want \"Z\"", one[:n], err)
		}
		if i == 1 && (n != 0 || err != io.EOF) {
			t.Errorf("Read past a truncation: %d bytes, %v; want io.EOF", n, err)
		}
	}
	rd.Close()
	want.Truncate(2)
	copy(want.Bytes()[1:], "Z")

	// Stat / ReadDir / FS() see the uncommitted state
	if fi, err := w.Stat("/hello"); err != nil || fi.Size() != int64(len("hi\nmore\n")) {
		t.Errorf("RW.Stat: %v, %v", fi, err)
	}
	ents, err := w.ReadDir("/")
	if err != nil || len(ents) != 3 || ents[0].Name() != "excl" || ents[2].Name() != "new" {
		t.Errorf("RW.ReadDir: %v, %v", ents, err)
	}
	if b, err := fs.ReadFile(w.FS(), "hello"); err != nil || string(b) != "hi\nmore\n" {
		t.Errorf("fs.ReadFile(RW.FS()): %q, %v", b, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if b, err := r.ReadFile("new"); err != nil || !bytes.Equal(b, want.Bytes()) {
		t.Errorf("after commit: %d bytes, %v; want %d", len(b), err, want.Len())
	}
	if b, err := r.ReadFile("hello"); err != nil || string(b) != "hi\nmore\n" {
		t.Errorf("appended file after commit: %q, %v", b, err)
	}
	checktest.Image(t, img)
}

// TestRWFSTestFS: testing/fstest passes on RW.FS() of an image being
// written, before any commit.
func TestRWFSTestFS(t *testing.T) {
	img := newImage(t)
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.MkdirAll("/a/b/c", 0o755))
	must(w.WriteFile("/a/b/c/deep", []byte("deep"), 0o600))
	big := bytes.Repeat([]byte("0123456789abcdef"), 1500) // past the inline limit: a regular extent
	must(w.WriteFile("/a/big", big, 0o644))
	must(w.Symlink("b/c/deep", "/a/link"))
	must(w.Link("/a/big", "/a/hardlink"))
	must(w.CreateSubvolume("/sub"))
	must(w.WriteFile("/sub/in-subvol", []byte("s"), 0o644))
	must(w.Snapshot("/sub", "/snap", true))
	must(w.Mknod("/fifo", syscall.S_IFIFO|0o644, 0))
	for i := range 50 {
		must(w.WriteFile(fmt.Sprintf("/a/many-%02d", i), []byte{byte(i)}, 0o644))
	}
	f, err := w.Create("/a/sparse")
	must(err)
	_, err = f.WriteAt([]byte("end"), 40<<10) // after a hole
	must(err)
	f.Close()
	must(w.Remove("/hello"))

	if err := fstest.TestFS(w.FS(), "a/b/c/deep", "a/big", "a/link", "a/hardlink", "sub/in-subvol",
		"snap/in-subvol", "fifo", "a/many-49", "a/sparse"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.FS().Stat("hello"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("removed file: %v", err)
	}
	if _, err := w.FS().Open("/a"); err == nil {
		t.Errorf("Open of a rooted name succeeded")
	}
}

// TestRWClosed: calls on an RW, its files and its FS view after Close fail
// with fs.ErrClosed.
func TestRWClosed(t *testing.T) {
	w, err := gobtrfs.OpenRW(newImage(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.Create("/x")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for name, call := range map[string]func() error{
		"WriteFile": func() error { return w.WriteFile("/a", []byte("x"), 0o644) },
		"ReadFile":  func() error { _, err := w.ReadFile("/hello"); return err },
		"Stat":      func() error { _, err := w.Stat("/hello"); return err },
		"FS().Open": func() error { _, err := w.FS().Open("hello"); return err },
		"f.Write":   func() error { _, err := f.Write([]byte("x")); return err },
		"Commit":    w.Commit,
		"Close":     w.Close,
	} {
		if err := call(); !errors.Is(err, fs.ErrClosed) {
			t.Errorf("%s after Close: %v, want fs.ErrClosed", name, err)
		}
	}
}

// TestRWOpenFileLikeOS: RW.OpenFile answers O_CREATE through a dangling
// symlink, O_CREATE of "name/" and O_CREATE of a directory as
// os.OpenFile does on Linux (the same error, the same file made).
func TestRWOpenFileLikeOS(t *testing.T) {
	img := newImage(t)
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Mkdir("/d", 0o755))
	must(os.Mkdir(dir+"/d", 0o755))
	must(w.Symlink("/d/abs-target", "/abs"))
	must(os.Symlink(dir+"/d/abs-target", dir+"/abs"))
	must(w.Symlink("rel-target", "/d/rel"))
	must(os.Symlink("rel-target", dir+"/d/rel"))
	must(w.Symlink("loop", "/loop"))
	must(os.Symlink("loop", dir+"/loop"))
	errno := func(err error) error {
		var e syscall.Errno
		if errors.As(err, &e) {
			return e
		}
		return err
	}
	for _, c := range []struct {
		name    string
		flag    int
		created string // the file that must exist afterwards
	}{
		{"/abs", os.O_WRONLY | os.O_CREATE, "/d/abs-target"},
		{"/d/rel", os.O_RDWR | os.O_CREATE, "/d/rel-target"},
		{"/abs", os.O_WRONLY | os.O_CREATE | os.O_EXCL, ""},
		{"/loop", os.O_WRONLY | os.O_CREATE, ""},
		{"/new/", os.O_WRONLY | os.O_CREATE, ""},
		{"/d", os.O_RDONLY | os.O_CREATE, ""},
	} {
		f, rwErr := w.OpenFile(c.name, c.flag, 0o640)
		if f != nil {
			f.Close()
		}
		g, osErr := os.OpenFile(dir+c.name, c.flag, 0o640)
		if g != nil {
			g.Close()
		}
		if errno(rwErr) != errno(osErr) {
			t.Errorf("OpenFile(%q, %#x): RW: %v; os: %v", c.name, c.flag, rwErr, osErr)
		}
		if c.created != "" {
			_, osStat := os.Lstat(dir + c.created)
			fi, rwStat := w.Lstat(c.created)
			if osStat != nil || rwStat != nil || !fi.Mode().IsRegular() {
				t.Errorf("OpenFile(%q, %#x) made %s? RW: %v, %v; os: %v", c.name, c.flag, c.created, fi, rwStat, osStat)
			}
		}
		if _, err := w.Lstat("/new"); err == nil {
			t.Errorf("OpenFile(%q, %#x) made /new", c.name, c.flag)
		}
	}
}
