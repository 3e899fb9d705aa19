package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestKernelImageEditedByCommands: a kernel-made image changed by put, rm,
// mv, mkdir, ln and subvolume, then mounted by the kernel again.
func TestKernelImageEditedByCommands(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := wtMkfsBtrfs(t)
	mnt := testutil.LoopMount(t, img, "noatime")
	w := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(mnt, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mnt, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("kdir/a", "kernel a")
	w("kdir/big", strings.Repeat("kernel big ", 20000))
	w("kfile", "k")
	w("kfile2", "gone soon")
	os.Link(filepath.Join(mnt, "kfile"), filepath.Join(mnt, "kdir/kfile-link"))
	unix.Setxattr(filepath.Join(mnt, "kfile"), "user.k", []byte("v"), 0)
	testutil.Run(t, "btrfs", "subvolume", "create", filepath.Join(mnt, "sv"))
	w("sv/inside", "in the subvolume")
	testutil.Unmount(t, mnt)
	checktest.Image(t, img)

	src := wtMakeSource(t)
	runW(t, img, putMain, img, src, "/")
	runW(t, img, rmMain, img, "/kfile2")
	runW(t, img, mvMain, img, "/kdir", "/kdir-moved")
	runW(t, img, putMain, img, filepath.Join(src, "small"), "/kdir-moved/a") // replaces
	runW(t, img, lnMain, "-s", img, "kdir-moved/big", "/biglink")
	runW(t, img, mkdirMain, "-p", img, "/new/deep/dir")
	runW(t, img, wtSubvolumeMain2, "snapshot", img, "/sv", "/sv-snap")
	runW(t, img, rmMain, "-r", img, "/sv")

	mnt = testutil.LoopMount(t, img, "noatime")
	wtCompareTrees(t, "kernel view of put", wtDescribeHostTree(t, src), wtDescribeHostTree(t, filepath.Join(mnt, "src")))
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(mnt, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("kdir-moved/a") != "hello\n" || read("biglink") != strings.Repeat("kernel big ", 20000) ||
		read("sv-snap/inside") != "in the subvolume" || read("kdir-moved/kfile-link") != "k" {
		t.Fatal("kernel sees wrong content")
	}
	for _, gone := range []string{"kfile2", "kdir", "sv"} {
		if _, err := os.Lstat(filepath.Join(mnt, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s still there: %v", gone, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(mnt, "new/deep/dir")); err != nil || !fi.IsDir() {
		t.Fatalf("mkdir -p: %v", err)
	}
	// the kernel writes on top
	if err := os.WriteFile(filepath.Join(mnt, "src/dir/big"), []byte("overwritten by the kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(mnt, "src/dir/deeper"))
	testutil.Unmount(t, mnt)
	checktest.Image(t, img)
	var out bytes.Buffer
	if err := subvolumeMain([]string{"list", img}, &out, io.Discard); err != nil || !strings.Contains(out.String(), "path sv-snap") {
		t.Fatalf("subvolume list: %v\n%s", err, out.String())
	}
}
