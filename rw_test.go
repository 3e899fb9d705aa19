package gobtrfs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestRWLibrary drives the public write API (a COW filesystem with
// snapshots inside a file), then reads the image back three ways: through
// the read API, through our checker and btrfs check, and through the kernel.
func TestRWLibrary(t *testing.T) {
	img := filepath.Join(t.TempDir(), "lib.img")
	if err := gobtrfs.CreateImage(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, &gobtrfs.RWOptions{Compress: "zstd"})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	big := bytes.Repeat([]byte("gobtrfs library data "), 50000) // ~1 MiB, compressible
	mtime := time.Unix(1700000000, 123456789)
	must(w.MkdirAll("/a/b/c", 0o755))
	must(w.WriteFile("/a/b/c/big", big, 0o640))
	must(w.WriteFile("/a/small", []byte("hi\n"), 0o644))
	must(w.Symlink("b/c/big", "/a/link"))
	must(w.Link("/a/small", "/a/hard"))
	must(w.Chtimes("/a/small", mtime, mtime))
	must(w.Setxattr("/a/small", "user.k", []byte("v"), 0))
	must(w.CreateSubvolume("/sv"))
	must(w.WriteFile("/sv/f", big[:100000], 0o600))
	must(w.Snapshot("/sv", "/snap", true))
	must(w.WriteFile("/sv/f", []byte("changed after snapshot"), 0o600))
	must(w.Clone("/a/b/c/big", 0, "/a/clone", 0, 1<<20))
	must(w.WriteFile("/a/prealloc", nil, 0o644))
	must(w.Fallocate("/a/prealloc", 0, 0, 1<<20))
	if _, err := w.WriteAt("/a/prealloc", []byte("in the middle"), 4096); err != nil {
		t.Fatal(err)
	}
	must(w.Rename("/a/hard", "/a/hard2"))
	if err := w.RenameFlags("/a/small", "/a/hard2", gobtrfs.RenameNoReplace); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("RENAME_NOREPLACE onto an existing name: %v, want EEXIST", err)
	}
	if err := w.Remove("/a/b"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("remove non-empty dir: %v, want ENOTEMPTY", err)
	}
	if err := w.Mkdir("/nope/x", 0o755); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("mkdir under missing dir: %v, want ENOENT", err)
	}
	must(w.WriteFile("/gone", []byte("x"), 0o644))
	must(w.Remove("/gone"))
	must(w.Close())

	checktest.Image(t, img)

	r, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	expect := map[string][]byte{
		"a/b/c/big":  big,
		"a/small":    []byte("hi\n"),
		"a/hard2":    []byte("hi\n"),
		"a/link":     big,
		"sv/f":       []byte("changed after snapshot"),
		"snap/f":     big[:100000],
		"a/clone":    big[:1<<20],
		"a/prealloc": append(append(make([]byte, 4096), "in the middle"...), make([]byte, (1<<20)-4096-13)...),
	}
	for name, want := range expect {
		got, err := fs.ReadFile(r, name)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: err %v, %d bytes, want %d", name, err, len(got), len(want))
		}
	}
	if _, err := r.Lstat("gone"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("removed file still there: %v", err)
	}
	st, err := r.Lstat("a/small")
	if err != nil || !st.ModTime().Equal(mtime) || st.Sys().(*gobtrfs.Stat).Nlink != 2 {
		t.Fatalf("a/small: %v %v %+v", err, st.ModTime(), st.Sys())
	}
	if v, err := r.GetXattr("a/small", "user.k"); err != nil || string(v) != "v" {
		t.Fatalf("xattr: %q %v", v, err)
	}

	if !testutil.HaveRootLoop() {
		t.Log("kernel comparison skipped: needs root with loop devices")
		return
	}
	mnt := testutil.LoopMount(t, img, "ro")
	defer testutil.Unmount(t, mnt)
	for name, want := range expect {
		got, err := os.ReadFile(filepath.Join(mnt, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("kernel %s: err %v, %d bytes, want %d", name, err, len(got), len(want))
		}
	}
}
