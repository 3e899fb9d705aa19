package ctree

import (
	"fmt"
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// DeleteItem deletes the item with key; the error wraps fs.ErrNotExist if there is none.
func (t *Tree) DeleteItem(a Allocator, key ondisk.Key) error {
	p, found, err := t.searchSlot(a, key, modeDelete, 0)
	if err == nil && !found {
		err = fs.ErrNotExist
	}
	if err == nil {
		err = p.deleteSlots(a, p.Slots[0], 1)
	}
	if err != nil {
		return t.opError("delete", key, err)
	}
	return nil
}

// DeleteRange deletes every item with min <= key <= max, a leaf at a time.
func (t *Tree) DeleteRange(a Allocator, min, max ondisk.Key) error {
	if err := t.deleteRange(a, min, max); err != nil {
		return fmt.Errorf("delete range %v..%v (tree %s): %w", min, max, ondisk.TreeName(t.ID), err)
	}
	return nil
}

func (t *Tree) deleteRange(a Allocator, min, max ondisk.Key) error {
	for min.Compare(max) <= 0 {
		p, _, err := t.searchSlot(a, min, modeDelete, 0)
		if err != nil {
			return err
		}
		leaf, slot := p.Nodes[0], p.Slots[0]
		nr := numItems(leaf)
		if slot >= nr {
			// the next key (if any) is in a later leaf: find it, then delete from there
			rp, ok, err := t.SearchForward(min)
			if err != nil || !ok {
				return err
			}
			next := rp.Key()
			if next.Compare(max) > 0 {
				return nil
			}
			if next.Compare(min) <= 0 {
				return fmt.Errorf("search for %v went past %v: %w", min, next, errInternal)
			}
			min = next
			continue
		}
		end := slot
		for end < nr && leaf.Key(end).Compare(max) <= 0 {
			end++
		}
		if end == slot {
			return nil
		}
		if err := p.deleteSlots(a, slot, end-slot); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSlots deletes n items from slot of the path's leaf. A leaf left
// empty is removed from the tree (unless it is the root), one left under a
// third full is merged into its neighbours if they have room, and a root
// node left with a single child is replaced by it. The path must come from
// this transaction's SearchForWrite (or a search made since the last change
// to the tree; it is COWed first). Afterwards the path is released: search
// again to go on. mirrors btrfs_del_items
func (p *Path) DeleteSlots(a Allocator, slot, n int) error {
	if err := p.deleteSlots(a, slot, n); err != nil {
		name := "?"
		if p.tree != nil {
			name = ondisk.TreeName(p.tree.ID)
		}
		return fmt.Errorf("delete slots %d+%d (tree %s): %w", slot, n, name, err)
	}
	return nil
}

func (p *Path) deleteSlots(a Allocator, slot, n int) error {
	defer p.release()
	if err := p.cowPath(a); err != nil {
		return err
	}
	t := p.tree
	leaf := p.Nodes[0]
	nr := numItems(leaf)
	if n <= 0 || slot < 0 || slot+n > nr {
		return fmt.Errorf("leaf %d has %d items: %w", uint64(leaf.Addr), nr, errInternal)
	}
	leafDeleteItems(leaf, slot, n)
	a.Dirty(leaf)
	nr -= n
	if nr == 0 {
		if p.Nodes[1] != nil {
			if err := t.delLeaf(a, p, leaf); err != nil {
				return err
			}
		}
		return t.shrinkRoot(a)
	}
	if slot == 0 {
		p.fixupLowKeys(a, firstKey(leaf), 1)
	}
	if leafSpaceUsed(leaf, 0, nr) < leafDataSize(leaf)/3 && p.Nodes[1] != nil {
		// mostly empty: try to merge it into the neighbours
		pslot := p.Slots[1]
		minPush := itemSz + itemSize(leaf, 0)
		if _, err := t.pushLeafLeft(a, p, 0, minPush, true, maxSlot); err != nil {
			return err
		}
		if p.Nodes[0] == leaf && numItems(leaf) > 0 {
			// all or nothing: a leaf with a few items between full ones gains nothing
			if _, err := t.pushLeafRight(a, p, 0, leafSpaceUsed(leaf, 0, numItems(leaf)), true, 0); err != nil {
				return err
			}
		}
		if numItems(leaf) == 0 {
			p.Slots[1] = pslot
			if err := t.delLeaf(a, p, leaf); err != nil {
				return err
			}
		}
	}
	return t.shrinkRoot(a)
}

// delLeaf removes the empty leaf at the path's level-1 slot and frees it.
// mirrors btrfs_del_leaf
func (t *Tree) delLeaf(a Allocator, p *Path, leaf *diskio.Node) error {
	if err := t.delPtr(a, p, 1, p.Slots[1]); err != nil {
		return err
	}
	return t.freeBlock(a, leaf)
}

// delPtr deletes the pointer at slot of the path's node at level. A node
// left empty is removed from its parent in turn; an emptied root is replaced
// by an empty leaf. mirrors btrfs_del_ptr
func (t *Tree) delPtr(a Allocator, p *Path, level, slot int) error {
	n := p.Nodes[level]
	nodeDeletePtr(n, slot)
	a.Dirty(n)
	if numItems(n) > 0 {
		if slot == 0 {
			p.fixupLowKeys(a, firstKey(n), level+1)
		}
		return nil
	}
	if p.parent(level) == nil {
		// the whole tree is empty: the root becomes an empty leaf
		leaf, err := t.newBlock(a, 0)
		if err != nil {
			return err
		}
		t.setRoot(leaf)
		p.Nodes[level] = nil
		return t.freeBlock(a, n)
	}
	if err := t.freeBlock(a, n); err != nil {
		return err
	}
	return t.delPtr(a, p, level+1, p.Slots[level+1])
}

// shrinkRoot replaces a root node that has a single child by that child,
// as often as needed.
func (t *Tree) shrinkRoot(a Allocator) error {
	for t.Level > 0 {
		root, err := t.readRoot()
		if err != nil {
			return err
		}
		if numItems(root) != 1 {
			return nil
		}
		if root, err = t.cowBlock(a, root, nil, 0); err != nil {
			return err
		}
		if err := t.shrinkRootOnce(a, root, nil, 0); err != nil {
			return err
		}
	}
	return nil
}
