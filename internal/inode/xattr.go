package inode

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Xattr is one extended attribute.
type Xattr struct {
	Name  string
	Value []byte
}

// Xattrs returns every xattr of ino in key (hash) order. mirrors btrfs_listxattr
func Xattrs(t *ctree.Tree, ino ondisk.ObjectID) ([]Xattr, error) {
	lo := ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey}
	hi := ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey, Offset: ^uint64(0)}
	var out []Xattr
	var derr error
	err := t.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		items, err := dirItems(data)
		if err != nil {
			derr = fmt.Errorf("xattrs of inode %d (tree %s): item %v: %w", ino, ondisk.TreeName(t.ID), k, err)
			return false
		}
		for _, di := range items {
			out = append(out, Xattr{Name: string(di.Name), Value: di.Data})
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("xattrs of inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	return out, derr
}

// GetXattr returns the value of xattr name of ino; not found satisfies
// errors.Is(err, fs.ErrNotExist). mirrors btrfs_getxattr
func GetXattr(t *ctree.Tree, ino ondisk.ObjectID, name string) ([]byte, error) {
	key := ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey, Offset: item.NameHash([]byte(name))}
	data, ok, err := t.Lookup(key)
	if err != nil {
		return nil, fmt.Errorf("getxattr %q of inode %d (tree %s): %w", name, ino, ondisk.TreeName(t.ID), err)
	}
	if ok {
		items, err := dirItems(data)
		if err != nil {
			return nil, fmt.Errorf("getxattr %q of inode %d (tree %s): item %v: %w",
				name, ino, ondisk.TreeName(t.ID), key, err)
		}
		for _, di := range items {
			if string(di.Name) == name {
				return di.Data, nil
			}
		}
	}
	return nil, notExist("getxattr %q of inode %d (tree %s)", name, ino, ondisk.TreeName(t.ID))
}
