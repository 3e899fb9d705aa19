package ctree

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
)

// balanceLevel runs on the way down a deletion search. A root node with a
// single pointer is replaced by its child (the path's node at level becomes
// nil and the search must restart). A node at most a quarter full is merged
// with or balanced against its siblings: the right sibling is emptied into it
// if it fits, it is emptied into the left sibling if that fits, and a node
// left with one pointer takes some from the left. The path follows the
// pointer it was on. mirrors balance_level
func (t *Tree) balanceLevel(a Allocator, p *Path, level int) error {
	if level == 0 {
		return nil
	}
	mid := p.Nodes[level]
	origSlot := p.Slots[level]
	origPtr := nodeBlockPtr(mid, origSlot)
	parent := p.parent(level)
	if parent == nil {
		if numItems(mid) != 1 {
			return nil
		}
		return t.shrinkRootOnce(a, mid, p, level)
	}
	if numItems(mid) > maxPtrs(mid)/4 {
		return nil
	}
	pslot := p.Slots[level+1]
	var left, right *diskio.Node
	var err error
	if pslot > 0 {
		if left, err = t.readChildForWrite(a, parent, pslot-1); err != nil {
			return err
		}
	}
	if pslot+1 < numItems(parent) {
		if right, err = t.readChildForWrite(a, parent, pslot+1); err != nil {
			return err
		}
	}

	// first, try to make some room in the middle node
	if left != nil {
		origSlot += numItems(left)
		pushNodeLeft(a, left, mid, true)
	}
	// then try to empty the right sibling into the middle
	if right != nil {
		pushNodeLeft(a, mid, right, true)
		if numItems(right) == 0 {
			nodeDeletePtr(parent, pslot+1)
			a.Dirty(parent)
			if err := t.freeBlock(a, right); err != nil {
				return err
			}
		} else {
			setNodeKey(parent, pslot+1, firstKey(right))
			a.Dirty(parent)
		}
	}
	if numItems(mid) == 1 && left != nil {
		// a node with one pointer could be emptied by a deletion below:
		// take some pointers from the left
		if !balanceNodeRight(a, mid, left) {
			pushNodeLeft(a, left, mid, true)
		}
	}
	if numItems(mid) == 0 {
		// emptied into the left sibling (pslot > 0 here): drop it
		nodeDeletePtr(parent, pslot)
		a.Dirty(parent)
		if err := t.freeBlock(a, mid); err != nil {
			return err
		}
		mid = nil
	} else {
		setNodeKey(parent, pslot, firstKey(mid))
		a.Dirty(parent)
	}

	// update the path
	if left != nil {
		if numItems(left) > origSlot {
			p.Nodes[level] = left
			p.Slots[level+1]--
			p.Slots[level] = origSlot
		} else {
			origSlot -= numItems(left)
			p.Slots[level] = origSlot
		}
	}
	n := p.Nodes[level]
	if n == nil || mid == nil && n != left || p.Slots[level] >= numItems(n) || nodeBlockPtr(n, p.Slots[level]) != origPtr {
		return fmt.Errorf("balance at level %d lost the path: %w", level, errInternal)
	}
	return nil
}

// shrinkRootOnce replaces the root node (at level, with one pointer) by its
// child and frees it; the path's node at level becomes nil.
func (t *Tree) shrinkRootOnce(a Allocator, root *diskio.Node, p *Path, level int) error {
	child, err := t.readChildForWrite(a, root, 0)
	if err != nil {
		return err
	}
	t.setRoot(child)
	if p != nil {
		p.Nodes[level] = nil
	}
	return t.freeBlock(a, root)
}
