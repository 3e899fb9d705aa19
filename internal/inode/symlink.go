package inode

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// SymlinkTarget returns the raw inline extent at offset 0 of symlink ino: the
// target, unless the extent is compressed (then the caller decompresses
// Inline into RAMBytes). mirrors btrfs_get_link via page_get_link
func SymlinkTarget(t *ctree.Tree, ino ondisk.ObjectID) (FileExtent, error) {
	key := ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: 0}
	data, ok, err := t.Lookup(key)
	if err == nil && !ok {
		err = corrupt(fmt.Errorf("no inline extent"))
	}
	var e FileExtent
	if err == nil {
		e, err = decodeFileExtent(0, data)
	}
	if err == nil && e.Type != ExtentInline {
		err = corrupt(fmt.Errorf("target extent is type %d, not inline", e.Type))
	}
	if err != nil {
		return e, fmt.Errorf("readlink inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	return e, nil
}
