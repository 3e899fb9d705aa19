package inode

import (
	"bytes"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// DirEntry is one name in a directory. Location is an INODE_ITEM key for an
// inode in the same tree, or a ROOT_ITEM key for a subvolume.
type DirEntry struct {
	Name     string
	Location ondisk.Key
	Type     uint8 // BTRFS_FT_*
	Index    uint64
}

// IsSubvol reports whether the entry points to another subvolume's root.
func (d *DirEntry) IsSubvol() bool { return d.Location.Type == ondisk.RootItemKey }

func entryOf(di item.DirItem, index uint64) DirEntry {
	return DirEntry{Name: string(di.Name), Location: di.Location, Type: item.FTType(di.Type), Index: index}
}

// dirItems decodes a DIR_ITEM, DIR_INDEX or XATTR_ITEM item; on damage it
// returns the entries before it and an error that is diskio.ErrCorrupt.
func dirItems(data []byte) (item.DirItems, error) {
	ds, err := item.DecodeDirItems(data)
	return ds, corrupt(err)
}

// ReadDir calls fn for each entry of directory ino in index order (the order
// readdir returns), starting at index from, until fn returns false. An item
// that does not parse or an entry no directory can hold (see validEntry) is
// skipped: bad, if not nil, gets an *EntryError for it, and the rest of the
// directory is still listed. A block that cannot be read is skipped too
// (its entries are lost, the others listed) and the first such error is
// returned once the listing is done. mirrors btrfs_real_readdir
func ReadDir(t *ctree.Tree, ino ondisk.ObjectID, from uint64, fn func(DirEntry) bool, bad func(error)) error {
	lo := ondisk.Key{ObjectID: ino, Type: ondisk.DirIndexKey, Offset: from}
	hi := ondisk.Key{ObjectID: ino, Type: ondisk.DirIndexKey, Offset: ^uint64(0)}
	skip := func(k ondisk.Key, name []byte, target ondisk.ObjectID, err error) {
		if bad != nil {
			bad(&EntryError{Tree: t.ID, Dir: ino, Index: k.Offset, Name: string(name), Target: target, Err: err})
		}
	}
	// a leaf that cannot be read (the kernel's tree-checker rejects a leaf
	// with one malformed dir item) hides its own entries only
	var blockErr error
	onBlockErr := func(err error) {
		if blockErr == nil {
			blockErr = err
		}
	}
	err := t.RangeTolerant(lo, hi, func(k ondisk.Key, data []byte) bool {
		// a DIR_INDEX item holds exactly one entry: parse it alone, so a
		// damaged one hides nothing else
		di, n, err := item.DecodeDirItem(data)
		if err != nil {
			skip(k, nil, 0, corrupt(err))
			return true
		}
		if n != len(data) {
			skip(k, di.Name, di.Location.ObjectID, diskio.Corruptf("DIR_INDEX item of %d bytes holds an entry of %d", len(data), n))
			return true
		}
		if err := validEntry(&di); err != nil {
			skip(k, di.Name, di.Location.ObjectID, err)
			return true
		}
		return fn(entryOf(di, k.Offset))
	}, onBlockErr)
	if err == nil {
		err = blockErr
	}
	if err != nil {
		return fmt.Errorf("read dir %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	return nil
}

// Lookup finds name in directory dir through the DIR_ITEM name hash. When
// that item is damaged it falls back to scanning DIR_INDEX (LookupIndex).
// Not found satisfies errors.Is(err, fs.ErrNotExist). mirrors btrfs_lookup_dir_item
func Lookup(t *ctree.Tree, dir ondisk.ObjectID, name string) (DirEntry, error) {
	key := ondisk.Key{ObjectID: dir, Type: ondisk.DirItemKey, Offset: item.NameHash([]byte(name))}
	data, ok, err := t.Lookup(key)
	if err != nil {
		return DirEntry{}, fmt.Errorf("lookup %q in dir %d (tree %s): %w", name, dir, ondisk.TreeName(t.ID), err)
	}
	if !ok {
		return DirEntry{}, notExist("lookup %q in dir %d (tree %s)", name, dir, ondisk.TreeName(t.ID))
	}
	items, derr := dirItems(data)
	for _, di := range items {
		if bytes.Equal(di.Name, []byte(name)) {
			if err := validEntry(&di); err != nil {
				// a malformed entry never matches
				return DirEntry{}, &EntryError{Tree: t.ID, Dir: dir, Name: name, Target: di.Location.ObjectID, Err: err}
			}
			return entryOf(di, 0), nil
		}
	}
	if derr != nil {
		e, err := LookupIndex(t, dir, name)
		if err != nil {
			// the cause is the damaged item; the index's answer (often
			// not-exist) is only reported, or the name would pass as absent
			return DirEntry{}, fmt.Errorf("lookup %q in dir %d (tree %s): item %v: %w (and by index: %v)",
				name, dir, ondisk.TreeName(t.ID), key, derr, err)
		}
		return e, nil
	}
	return DirEntry{}, notExist("lookup %q in dir %d (tree %s)", name, dir, ondisk.TreeName(t.ID))
}

// LookupIndex finds name by scanning the DIR_INDEX items of dir (linear;
// for directories whose DIR_ITEMs are damaged).
func LookupIndex(t *ctree.Tree, dir ondisk.ObjectID, name string) (DirEntry, error) {
	var found *DirEntry
	err := ReadDir(t, dir, 0, func(e DirEntry) bool {
		if e.Name == name {
			found = &e
			return false
		}
		return true
	}, nil)
	if found != nil {
		return *found, nil // found past an unreadable block
	}
	if err != nil {
		return DirEntry{}, err
	}
	if found == nil {
		return DirEntry{}, notExist("lookup %q in dir %d (tree %s)", name, dir, ondisk.TreeName(t.ID))
	}
	return *found, nil
}
