package testimg

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
)

// OpenFS opens img read-only with fsinfo (superblock, chunk and root
// trees); t.Cleanup closes the device. (Through it testimg imports fsinfo:
// tests of fsinfo and of the packages it uses take their helpers from
// testutil instead.)
func OpenFS(t testing.TB, img string) *fsinfo.FSInfo {
	t.Helper()
	dev, err := blockdev.OpenFile(img, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	info, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open %s: %v", img, err)
	}
	return info
}
