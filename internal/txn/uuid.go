package txn

import (
	"errors"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// uuidTree returns the uuid tree, or nil when the filesystem has none yet
// (Linux creates it on the next read-write mount and fills it then).
func (f *Engine) uuidTree() (*treeState, error) {
	ts, err := f.tree(ondisk.UUIDTreeObjectID)
	if errors.Is(err, fsinfo.ErrNoTree) {
		return nil, nil
	}
	return ts, err
}

// uuidAdd records that subvolume id has uuid (as typ: UUID_KEY_SUBVOL or
// UUID_KEY_RECEIVED_SUBVOL); it does nothing if it is recorded already.
// mirrors btrfs_uuid_tree_add
func (f *Engine) uuidAdd(u ondisk.UUID, typ ondisk.ItemType, id ondisk.ObjectID) error {
	if u.IsZero() {
		return nil
	}
	ts, err := f.uuidTree()
	if err != nil || ts == nil {
		return err
	}
	oid, off := item.UUIDKey(u)
	key := ondisk.Key{ObjectID: ondisk.ObjectID(oid), Type: typ, Offset: off}
	var x item.UUIDItem
	data, ok, err := ts.t.Lookup(key)
	if err != nil {
		return err
	}
	if ok {
		if x, err = item.DecodeUUIDItem(data); err != nil {
			return fmt.Errorf("uuid item %v: %w", key, err)
		}
		for _, s := range x.SubvolIDs {
			if s == uint64(id) {
				return nil
			}
		}
	}
	x.SubvolIDs = append(x.SubvolIDs, uint64(id))
	return ts.t.PutItem(allocator{f}, key, x.Bytes())
}

// uuidDel removes subvolume id from uuid's entry, if it is there.
// mirrors btrfs_uuid_tree_remove
func (f *Engine) uuidDel(u ondisk.UUID, typ ondisk.ItemType, id ondisk.ObjectID) error {
	if u.IsZero() {
		return nil
	}
	ts, err := f.uuidTree()
	if err != nil || ts == nil {
		return err
	}
	oid, off := item.UUIDKey(u)
	key := ondisk.Key{ObjectID: ondisk.ObjectID(oid), Type: typ, Offset: off}
	data, ok, err := ts.t.Lookup(key)
	if err != nil || !ok {
		return err
	}
	x, err := item.DecodeUUIDItem(data)
	if err != nil {
		return fmt.Errorf("uuid item %v: %w", key, err)
	}
	var rest item.UUIDItem
	for _, s := range x.SubvolIDs {
		if s != uint64(id) {
			rest.SubvolIDs = append(rest.SubvolIDs, s)
		}
	}
	switch {
	case len(rest.SubvolIDs) == len(x.SubvolIDs):
		return nil
	case len(rest.SubvolIDs) == 0:
		return ts.t.DeleteItem(allocator{f}, key)
	}
	return ts.t.UpdateItem(allocator{f}, key, rest.Bytes())
}
