package gobtrfs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var orphanKeyRE = regexp.MustCompile(`key \(ORPHAN ORPHAN_ITEM (\d+)\)`)

// orphanInodes lists the inodes btrfs-progs' dump of img's FS tree has
// ORPHAN_ITEMs for, and reports whether each still has its INODE_ITEM.
func orphanInodes(t *testing.T, img string) map[string]bool {
	t.Helper()
	out := testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", "fs", img)
	got := map[string]bool{}
	for _, m := range orphanKeyRE.FindAllStringSubmatch(out, -1) {
		got[m[1]] = strings.Contains(out, "key ("+m[1]+" INODE_ITEM 0)")
	}
	return got
}

// TestKernelOrphansCleaned: a file the kernel's btrfs had open when its
// last name went, crashed with its ORPHAN_ITEM on disk, is deleted by our
// read-write open, as the kernel's next read-write mount deletes it
// (btrfs_orphan_cleanup); read-only opens show nothing of it and leave the
// image alone.
func TestKernelOrphansCleaned(t *testing.T) {
	testutil.NeedRootLoop(t)
	testutil.NeedProgs(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	crash := filepath.Join(dir, "crash")
	testutil.Mkfs(t, img, 256<<20)
	mnt := testutil.LoopMount(t, img, "commit=300")
	data := bytes.Repeat([]byte("held open "), 400000)
	if err := os.WriteFile(filepath.Join(mnt, "gone"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "keep"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(mnt, "gone"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "gone")); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "btrfs", "filesystem", "sync", mnt)
	testutil.Run(t, "cp", "--sparse=always", img, crash)
	f.Close()
	testutil.Unmount(t, mnt)

	before := orphanInodes(t, crash)
	if len(before) == 0 {
		t.Skip("the kernel left no ORPHAN_ITEM in the crash copy")
	}
	for ino, has := range before {
		if !has {
			t.Fatalf("crash copy: ORPHAN_ITEM %s without its inode (the test needs one)", ino)
		}
	}
	checktest.Image(t, crash)

	// Read-only: only "keep", and the image is not written.
	sum := testutil.Run(t, "sha256sum", crash)
	ro, err := gobtrfs.Open(crash, nil)
	if err != nil {
		t.Fatal(err)
	}
	es, err := ro.ReadDir(".")
	ro.Close()
	if err != nil || len(es) != 1 || es[0].Name() != "keep" {
		t.Errorf("read-only root: %v %v, want [keep]", es, err)
	}
	if testutil.Run(t, "sha256sum", crash) != sum {
		t.Errorf("a read-only open wrote the image")
	}

	rw, err := gobtrfs.OpenRW(crash, nil)
	if err != nil {
		t.Fatalf("OpenRW: %v", err)
	}
	if err := rw.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	checktest.Image(t, crash)
	after := orphanInodes(t, crash)
	if len(after) != 0 {
		t.Errorf("after our read-write open: ORPHAN_ITEMs %v left", after)
	}
	out := testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", "fs", crash)
	for ino := range before {
		if strings.Contains(out, "key ("+ino+" INODE_ITEM 0)") {
			t.Errorf("after our read-write open: orphan inode %s is still there", ino)
		}
	}
	// The kernel agrees: nothing left to clean, same tree.
	kmnt := testutil.LoopMount(t, crash, "")
	kes, err := os.ReadDir(kmnt)
	testutil.Unmount(t, kmnt)
	if err != nil || len(kes) != 1 || kes[0].Name() != "keep" {
		t.Errorf("kernel root after our cleanup: %v %v, want [keep]", kes, err)
	}
	checktest.Image(t, crash)
}
