package ctree

import (
	"fmt"
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// InsertItem inserts a new item; the error wraps ErrExists if key is present.
func (t *Tree) InsertItem(a Allocator, key ondisk.Key, data []byte) error {
	p, err := t.InsertEmptyItem(a, key, len(data))
	if err != nil {
		return err
	}
	copy(p.Data(), data)
	return nil
}

// InsertEmptyItem inserts a new item of size zeroed bytes and returns a path
// at it; the caller fills p.Data() (the leaf is already dirty). The error
// wraps ErrExists if key is present, ErrTooLarge if size exceeds
// MaxItemSize. mirrors btrfs_insert_empty_item
func (t *Tree) InsertEmptyItem(a Allocator, key ondisk.Key, size int) (*Path, error) {
	if size < 0 {
		return nil, t.opError("insert", key, fmt.Errorf("negative size %d: %w", size, errInternal))
	}
	p, found, err := t.searchSlot(a, key, modeInsert, size)
	if err != nil {
		return nil, t.opError("insert", key, err)
	}
	if found {
		return nil, t.opError("insert", key, ErrExists)
	}
	if err := p.insertAtSlot(a, key, size); err != nil {
		return nil, t.opError("insert", key, err)
	}
	return p, nil
}

// insertAtSlot puts a new zeroed item at the path's slot of a leaf that has the room.
func (p *Path) insertAtSlot(a Allocator, key ondisk.Key, size int) error {
	leaf, slot := p.Nodes[0], p.Slots[0]
	if leafFree(leaf) < size+itemSz {
		return fmt.Errorf("leaf %d has %d bytes free for a %d-byte item: %w", uint64(leaf.Addr),
			leafFree(leaf), size, errInternal)
	}
	leafInsertItem(leaf, slot, key, size)
	a.Dirty(leaf)
	if slot == 0 {
		p.fixupLowKeys(a, key, 1)
	}
	return nil
}

// PutItem inserts the item or replaces the data of the existing one.
func (t *Tree) PutItem(a Allocator, key ondisk.Key, data []byte) error {
	p, found, err := t.searchSlot(a, key, modeInsert, len(data))
	if err == nil {
		if found {
			err = p.setData(a, data)
		} else if err = p.insertAtSlot(a, key, len(data)); err == nil {
			copy(p.Data(), data)
		}
	}
	if err != nil {
		return t.opError("put", key, err)
	}
	return nil
}

// UpdateItem replaces the data of the item with key, resizing it as needed;
// the error wraps fs.ErrNotExist if there is no such item.
func (t *Tree) UpdateItem(a Allocator, key ondisk.Key, data []byte) error {
	p, found, err := t.searchSlot(a, key, modeCOW, 0)
	if err == nil && !found {
		err = fs.ErrNotExist
	}
	if err == nil {
		err = p.setData(a, data)
	}
	if err != nil {
		return t.opError("update", key, err)
	}
	return nil
}

// setData resizes the path's item to len(data) and copies data in.
func (p *Path) setData(a Allocator, data []byte) error {
	old := itemSize(p.Nodes[0], p.Slots[0])
	var err error
	switch {
	case len(data) > old:
		err = p.ExtendItem(a, len(data)-old)
	case len(data) < old:
		err = p.TruncateItem(a, len(data), true)
	}
	if err != nil {
		return err
	}
	copy(p.Data(), data)
	a.Dirty(p.Nodes[0])
	return nil
}

// ExtendItem grows the path's item by size zeroed bytes at its end, moving
// it to a split leaf if its leaf lacks the room (the path follows it).
// The error wraps ErrTooLarge if the item would exceed MaxItemSize.
// mirrors btrfs_extend_item
func (p *Path) ExtendItem(a Allocator, size int) error {
	if err := p.writableItem(a); err != nil {
		return p.opError("extend", err)
	}
	leaf, slot := p.Nodes[0], p.Slots[0]
	key := leaf.Key(slot)
	if size < 0 {
		return p.tree.opError("extend", key, fmt.Errorf("negative size %d: %w", size, errInternal))
	}
	if size == 0 {
		return nil
	}
	if itemSize(leaf, slot)+size > leafDataSize(leaf)-itemSz {
		return p.tree.opError("extend", key, fmt.Errorf("%d+%d bytes: %w", itemSize(leaf, slot), size, ErrTooLarge))
	}
	if leafFree(leaf) < size {
		np, found, err := p.tree.searchSlot(a, key, modeExtend, size)
		if err == nil && !found {
			err = fmt.Errorf("item vanished: %w", errInternal)
		}
		if err != nil {
			return p.tree.opError("extend", key, err)
		}
		p.Nodes, p.Slots = np.Nodes, np.Slots
		leaf, slot = p.Nodes[0], p.Slots[0]
	}
	leafExtendItem(leaf, slot, size)
	a.Dirty(leaf)
	return nil
}

// TruncateItem shrinks the path's item to newSize bytes, dropping bytes at
// its end (fromEnd) or at its start. Unlike btrfs_truncate_item it never
// changes the key (see SetItemKey) nor looks inside the item.
// mirrors btrfs_truncate_item
func (p *Path) TruncateItem(a Allocator, newSize int, fromEnd bool) error {
	if err := p.writableItem(a); err != nil {
		return p.opError("truncate", err)
	}
	leaf, slot := p.Nodes[0], p.Slots[0]
	old := itemSize(leaf, slot)
	if newSize < 0 || newSize > old {
		return p.tree.opError("truncate", leaf.Key(slot),
			fmt.Errorf("new size %d, item has %d bytes: %w", newSize, old, errInternal))
	}
	if newSize == old {
		return nil
	}
	leafTruncateItem(leaf, slot, newSize, fromEnd)
	a.Dirty(leaf)
	return nil
}

// MarkDirty tells the transaction that p.Data() was edited in place. The
// path must come from this transaction's SearchForWrite or InsertEmptyItem:
// a block found by a read-only Search must not be edited.
func (p *Path) MarkDirty(a Allocator) {
	if p.Nodes[0] != nil {
		a.Dirty(p.Nodes[0])
	}
}

// SetItemKey changes the key of the path's item; the new key must sort
// between its neighbours in the tree. mirrors btrfs_set_item_key_safe
func (p *Path) SetItemKey(a Allocator, key ondisk.Key) error {
	if err := p.writableItem(a); err != nil {
		return p.opError("set key", err)
	}
	leaf, slot := p.Nodes[0], p.Slots[0]
	old := leaf.Key(slot)
	if err := p.checkFits(key, slot+1); err != nil {
		return p.tree.opError("set key of "+old.String()+" to", key, err)
	}
	setItemKey(leaf, slot, key)
	a.Dirty(leaf)
	if slot == 0 {
		p.fixupLowKeys(a, key, 1)
	}
	return nil
}

// SetupItemForInsert inserts a new item of size zeroed bytes at the path's
// slot: the position SearchForWrite(a, key, size) returned for an absent key
// (which made the room). The caller fills p.Data().
// mirrors btrfs_setup_item_for_insert
func (p *Path) SetupItemForInsert(a Allocator, key ondisk.Key, size int) error {
	if err := p.cowPath(a); err != nil {
		return p.tree.opError("insert", key, err)
	}
	if size < 0 || p.Slots[0] > numItems(p.Nodes[0]) {
		return p.tree.opError("insert", key, fmt.Errorf("size %d at slot %d: %w", size, p.Slots[0], errInternal))
	}
	if err := p.checkFits(key, p.Slots[0]); err != nil {
		return p.tree.opError("insert", key, err)
	}
	if err := p.insertAtSlot(a, key, size); err != nil {
		return p.tree.opError("insert", key, err)
	}
	return nil
}

// checkFits checks that key sorts after the item before the path's slot and
// before the item at nextSlot of the leaf (looking into the neighbouring
// leaves at the edges).
func (p *Path) checkFits(key ondisk.Key, nextSlot int) error {
	q := *p
	ok, err := q.Prev()
	if err != nil {
		return err
	}
	if ok {
		if c := q.Key().Compare(key); c >= 0 {
			if c == 0 {
				return ErrExists
			}
			return fmt.Errorf("previous key %v is not below it: %w", q.Key(), errInternal)
		}
	}
	q = *p
	q.Slots[0] = nextSlot - 1
	if ok, err = q.Next(); err != nil {
		return err
	}
	if ok {
		if c := q.Key().Compare(key); c <= 0 {
			if c == 0 {
				return ErrExists
			}
			return fmt.Errorf("next key %v is not above it: %w", q.Key(), errInternal)
		}
	}
	return nil
}

// writableItem COWs the path and checks that it points at an item.
func (p *Path) writableItem(a Allocator) error {
	if err := p.cowPath(a); err != nil {
		return err
	}
	if !p.Valid() {
		return fmt.Errorf("path is not at an item: %w", errInternal)
	}
	return nil
}

// opError wraps err with the operation, the path's key if it has one, and the tree.
func (p *Path) opError(op string, err error) error {
	name := "?"
	if p.tree != nil {
		name = ondisk.TreeName(p.tree.ID)
	}
	if p.Valid() {
		return fmt.Errorf("%s %v (tree %s): %w", op, p.Key(), name, err)
	}
	return fmt.Errorf("%s (tree %s): %w", op, name, err)
}

// opError wraps err with the operation, the key and the tree.
func (t *Tree) opError(op string, key ondisk.Key, err error) error {
	name := "?"
	if t != nil {
		name = ondisk.TreeName(t.ID)
	}
	return fmt.Errorf("%s %v (tree %s): %w", op, key, name, err)
}
