package gobtrfs_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// TestPathWalkSameForEveryDoor checks the cases where the read-write
// library's walker used to resolve ".." lexically and drop ".." from
// relative symlink targets: RW and the read-only FS (one walker,
// internal/namei) now agree with the kernel.
func TestPathWalkSameForEveryDoor(t *testing.T) {
	img := filepath.Join(t.TempDir(), "walk.img")
	if err := gobtrfs.CreateImage(img, 128<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.MkdirAll("/a/b", 0o755))
	must(w.WriteFile("/a/x", []byte("x"), 0o644))
	must(w.Symlink("../x", "/a/b/up"))     // relative to its directory: /a/x
	must(w.Symlink("a/b", "/l"))           // l/.. is /a, not /
	must(w.Symlink("../x/", "/a/b/slash")) // a trailing slash on a file
	cases := []struct {
		rw, ro string // the same walk through RW and through FS
		want   string
		err    error
	}{
		{"/a/b/up", "a/b/up", "x", nil},
		{"/l/../x", "", "x", nil},
		{"/a/x/", "", "", syscall.ENOTDIR},
		{"/a/b/slash", "a/b/slash", "", syscall.ENOTDIR},
	}
	for _, c := range cases {
		got, err := w.ReadFile(c.rw)
		if !errors.Is(err, c.err) || string(got) != c.want {
			t.Errorf("RW.ReadFile(%q) = %q, %v; want %q, %v", c.rw, got, err, c.want, c.err)
		}
	}
	if err := w.RemoveAll("/l/.."); !errors.Is(err, syscall.EINVAL) {
		t.Errorf(`RemoveAll("/l/..") = %v, want EINVAL`, err)
	}
	if err := w.Mkdir("/a/..", 0o755); !errors.Is(err, syscall.EEXIST) {
		t.Errorf(`Mkdir("/a/..") = %v, want EEXIST`, err)
	}
	if err := w.Remove("/a/b/.."); !errors.Is(err, syscall.EEXIST) {
		t.Errorf(`Remove("/a/b/..") = %v, want EEXIST (lexically it was /a)`, err)
	}
	must(w.Close())
	checktest.Image(t, img)

	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for _, c := range cases {
		if c.ro == "" {
			continue // io/fs paths hold no "..", no trailing slash
		}
		got, err := fs.ReadFile(fsys, c.ro)
		if !errors.Is(err, c.err) || string(got) != c.want {
			t.Errorf("fs.ReadFile(%q) = %q, %v; want %q, %v", c.ro, got, err, c.want, c.err)
		}
	}
	if _, err := fs.Stat(fsys, "a/b"); err != nil {
		t.Errorf("a/b after the refused RemoveAll: %v", err)
	}
}
