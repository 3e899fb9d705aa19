package checktest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
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
