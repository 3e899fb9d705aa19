package main

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestMixedBGCommands runs the write commands on an image with mixed block
// groups (mkfs.btrfs --mixed): put (plain and zstd), mkdir, ln, mv,
// subvolume create and snapshot, rm; then put of more than fits fails
// with ENOSPC naming the file, the image stays clean, rm works on the full
// image and makes room again. Linux mounts the result and sees the tree
// put copied.
func TestMixedBGCommands(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	checktest.Mkfs(t, img, 128<<20, "--mixed")
	src := wtMakeSource(t)
	runW(t, img, putMain, img, src, "/")
	wtCompareTrees(t, "put tree", wtDescribeHostTree(t, src), wtDescribeImageTree(t, img, "src"))
	runW(t, img, putMain, "-z", "zstd", img, filepath.Join(src, "dir"), "/copy")
	runW(t, img, mkdirMain, "-p", img, "/a/b/c")
	runW(t, img, lnMain, "-s", img, "../../src/small", "/a/b/sym")
	runW(t, img, mvMain, img, "/a/b/c", "/a/moved")
	runW(t, img, wtSubvolumeMain2, "create", img, "/a/sv")
	runW(t, img, putMain, img, filepath.Join(src, "small"), "/a/sv/small")
	runW(t, img, wtSubvolumeMain2, "snapshot", "-r", img, "/a/sv", "/snap")
	runW(t, img, rmMain, "-r", img, "/copy", "/a/moved")

	// more than fits
	big := filepath.Join(t.TempDir(), "big")
	data := make([]byte, 150<<20)
	rand.New(rand.NewSource(4)).Read(data)
	if err := os.WriteFile(big, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	err := putMain([]string{img, big, "/big"}, &stderr)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "/big") {
		t.Fatalf("put of 150 MiB into a 128 MiB mixed image: %v, want ENOSPC naming /big", err)
	}
	checktest.Image(t, img)
	part := readImageFile(t, img, "/big")
	if len(part) < 100<<20 || !bytes.HasPrefix(data, part) {
		t.Fatalf("/big: %d bytes kept, want a prefix of the source of at least 100 MiB", len(part))
	}
	t.Logf("kept %d MiB of /big", len(part)>>20)
	runW(t, img, rmMain, img, "/big")
	small := filepath.Join(t.TempDir(), "again")
	if err := os.WriteFile(small, data[:60<<20], 0o644); err != nil {
		t.Fatal(err)
	}
	runW(t, img, putMain, img, small, "/again")
	if got := readImageFile(t, img, "/again"); !bytes.Equal(got, data[:60<<20]) {
		t.Fatal("/again differs after rm made room")
	}
	wtCompareTrees(t, "put tree at the end", wtDescribeHostTree(t, src), wtDescribeImageTree(t, img, "src"))

	if !testutil.HaveRootLoop() {
		t.Log("no kernel mount check: needs root and loop devices")
		return
	}
	mnt := testutil.LoopMount(t, img, "ro")
	wtCompareTrees(t, "kernel view of put", wtDescribeHostTree(t, src), wtDescribeHostTree(t, filepath.Join(mnt, "src")))
	got, err := os.ReadFile(filepath.Join(mnt, "again"))
	if err != nil || !bytes.Equal(got, data[:60<<20]) {
		t.Fatalf("kernel reads /again: %d bytes, %v", len(got), err)
	}
	testutil.Unmount(t, mnt)
}
