package fusefs

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// fileExtents reads the committed EXTENT_DATA items of inode ino of
// subvolume subvol from an unmounted image.
func fileExtents(t testing.TB, img string, subvol, ino uint64) []inode.FileExtent {
	t.Helper()
	out, err := extentsOf(img, subvol, ino)
	if err != nil {
		t.Fatalf("extents of %d in %s: %v", ino, img, err)
	}
	return out
}

func extentsOf(img string, subvol, ino uint64) ([]inode.FileExtent, error) {
	dev, err := blockdev.OpenFile(img, true)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	tr, err := fi.Tree(ondisk.ObjectID(subvol))
	if err != nil {
		return nil, err
	}
	var out []inode.FileExtent
	err = inode.Extents(tr, ondisk.ObjectID(ino), func(e inode.FileExtent) bool {
		e.Inline = append([]byte(nil), e.Inline...)
		out = append(out, e)
		return true
	})
	return out, err
}
