package checktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestFreshImages: an image of our mkfs passes Image (file) and FS (memory).
func TestFreshImages(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 128<<20); err != nil {
		t.Fatal(err)
	}
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := mkfs.Make(dev, mkfs.Config{}); err != nil {
		t.Fatal(err)
	}
	dev.Close()
	Image(t, img)

	mem := blockdev.NewMemory(128 << 20)
	if err := mkfs.Make(mem, mkfs.Config{MetadataProfile: "single"}); err != nil {
		t.Fatal(err)
	}
	fi, err := fsinfo.Open(mem, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	FS(t, fi)
}

// TestCatchesDamage: Problems reports a damaged tree block (both checkers
// when btrfs-progs is installed); Damaged cancels the end-of-test check of
// a test that damages its image on purpose, and an image Image found
// clean is not checked again at the end when no commit changed it.
func TestCatchesDamage(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 128<<20); err != nil {
		t.Fatal(err)
	}
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := mkfs.Make(dev, mkfs.Config{MetadataProfile: "single"}); err != nil {
		t.Fatal(err)
	}
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	copies, _, err := fi.Chunks.Map(fi.Super.Root, 4096)
	dev.Close()
	if err != nil || len(copies) == 0 {
		t.Fatalf("map the root tree block: %v", err)
	}
	phys := copies[0].Physical
	AtEnd(t, img)
	Image(t, img)
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff}, int64(phys)+200); err != nil {
		t.Fatal(err)
	}
	f.Close()
	msg := Problems(img)
	if !strings.Contains(msg, "our check of") {
		t.Fatalf("a damaged root tree block: our checker reports %q", msg)
	}
	if testutil.HaveProgs() && !strings.Contains(msg, "btrfs check --readonly") {
		t.Fatalf("a damaged root tree block: btrfs check part missing:\n%s", msg)
	}
	Damaged(img) // else the cleanup would fail this test
}
