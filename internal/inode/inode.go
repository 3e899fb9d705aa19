// Package inode reads btrfs inodes inside one subvolume tree: inode items,
// directory entries (DIR_ITEM / DIR_INDEX), back references, xattrs,
// symlink targets and file extent items (the kernel's inode.c,
// dir-item.c, xattr.c and file-item.c, read paths only).
package inode

import (
	"fmt"
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// notExist builds an error that satisfies errors.Is(err, fs.ErrNotExist).
// Misses are the normal case of lookups (a name about to be created), so
// the message is formatted only when asked for; args must be values that
// do not change (numbers, strings).
func notExist(format string, args ...any) error {
	return &notExistError{format: format, args: args}
}

type notExistError struct {
	format string
	args   []any
}

func (e *notExistError) Error() string {
	return fmt.Sprintf(e.format, e.args...) + ": " + fs.ErrNotExist.Error()
}
func (e *notExistError) Unwrap() error { return fs.ErrNotExist }

// Read returns the INODE_ITEM of ino in tree t. mirrors btrfs_read_locked_inode (the item part)
func Read(t *ctree.Tree, ino ondisk.ObjectID) (item.InodeItem, error) {
	key := ondisk.Key{ObjectID: ino, Type: ondisk.InodeItemKey}
	data, ok, err := t.Lookup(key)
	if err != nil {
		return item.InodeItem{}, fmt.Errorf("read inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	if !ok {
		return item.InodeItem{}, notExist("read inode %d (tree %s)", ino, ondisk.TreeName(t.ID))
	}
	x, err := item.DecodeInodeItem(data)
	if err != nil {
		return x, fmt.Errorf("read inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), corrupt(err))
	}
	return x, nil
}
