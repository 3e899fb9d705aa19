package gobtrfs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/acl"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"golang.org/x/sys/unix"
)

func hostTree(t *testing.T) (string, map[string][]byte) {
	src := filepath.Join(t.TempDir(), "src")
	files := map[string][]byte{
		"a.txt":       []byte("alpha\n"),
		"d/e/big.bin": bytes.Repeat([]byte("0123456789abcdef"), 70000),
		"d/empty":     nil,
	}
	for p, b := range files {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("e/big.bin", filepath.Join(src, "d/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(src, "a.txt"), filepath.Join(src, "d/hard")); err != nil {
		t.Fatal(err)
	}
	files["d/hard"] = files["a.txt"]
	return src, files
}

func compareTree(t *testing.T, fsys fs.FS, prefix string, files map[string][]byte) {
	t.Helper()
	for p, b := range files {
		got, err := fs.ReadFile(fsys, filepath.Join(prefix, p))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", p, len(got), err, len(b))
		}
	}
	if rfs, ok := fsys.(fs.ReadLinkFS); ok {
		if target, err := rfs.ReadLink(filepath.Join(prefix, "d/link")); err != nil || target != "e/big.bin" {
			t.Errorf("symlink: %q, %v", target, err)
		}
	}
}

// TestMkfsRootdirLibrary: the library makes an image from a host directory
// without the CLI (before, mkfs --rootdir only worked when the command's
// package had wired it up).
func TestMkfsRootdirLibrary(t *testing.T) {
	src, files := hostTree(t)
	img := filepath.Join(t.TempDir(), "img")
	if err := gobtrfs.Mkfs(img, gobtrfs.MkfsOptions{Size: 256 << 20, Rootdir: src, Compress: "zstd", Label: "lib"}); err != nil {
		t.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	compareTree(t, fsys, ".", files)
	st, err := fsys.Lstat("d/hard")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Sys().(*gobtrfs.Stat).Nlink; n != 2 {
		t.Errorf("hard link: nlink %d, want 2", n)
	}
	fsys.Close()
	checktest.Image(t, img)

	if err := gobtrfs.Mkfs(img, gobtrfs.MkfsOptions{Size: 256 << 20}); err == nil {
		t.Errorf("Mkfs over an existing file succeeded")
	}
	if err := gobtrfs.Mkfs(filepath.Join(t.TempDir(), "x"), gobtrfs.MkfsOptions{Size: 256 << 20, Rootdir: "/nonexistent"}); err == nil {
		t.Errorf("Mkfs with a missing rootdir succeeded")
	}
}

// TestCopyIn: RW.CopyIn copies a host tree into an open image.
func TestCopyIn(t *testing.T) {
	src, files := hostTree(t)
	if err := unix.Lsetxattr(filepath.Join(src, "a.txt"), "user.k", []byte("v"), 0); err != nil {
		t.Logf("no user xattrs on the host: %v", err)
	}
	img := filepath.Join(t.TempDir(), "img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.MkdirAll("/in", 0o755); err != nil {
		t.Fatal(err)
	}
	// a default ACL on the target directory must not reach the copies:
	// they keep the source's permissions (as cp -a and mkfs.btrfs --rootdir)
	def := acl.ACL{{Tag: acl.UserObj, Perm: 7, ID: acl.UndefinedID}, {Tag: acl.User, Perm: 5, ID: 1234},
		{Tag: acl.GroupObj, Perm: 5, ID: acl.UndefinedID}, {Tag: acl.Mask, Perm: 5, ID: acl.UndefinedID},
		{Tag: acl.Other, Perm: 0, ID: acl.UndefinedID}}
	if err := w.Setxattr("/in", acl.DefaultXattr, def.Bytes(), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.CopyIn(src, "/in"); err != nil {
		t.Fatal(err)
	}
	if err := w.CopyIn(src, "/missing"); err == nil {
		t.Errorf("CopyIn into a missing directory succeeded")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	compareTree(t, fsys, "in/src", files)
	for _, p := range []string{"in/src", "in/src/a.txt", "in/src/d"} {
		names, err := fsys.ListXattr(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if acl.IsACL(n) {
				t.Errorf("%s: copy has %s inherited from the target directory", p, n)
			}
		}
		if st, err := fsys.Lstat(p); err == nil && p == "in/src/a.txt" && st.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want the source's 0640", p, st.Mode().Perm())
		}
	}
	checktest.Image(t, img)
}
