package ctree

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// insertPtr inserts a pointer to addr (generation Transid) at slot of the
// path's node at level. mirrors insert_ptr
func (t *Tree) insertPtr(a Allocator, p *Path, level, slot int, key ondisk.Key, addr ondisk.LogicalAddr) error {
	n := p.Nodes[level]
	nr := numItems(n)
	if n.Level() != level || slot > nr || nr >= maxPtrs(n) {
		return fmt.Errorf("insert pointer at level %d slot %d of %d (max %d): %w",
			level, slot, nr, maxPtrs(n), errInternal)
	}
	nodeInsertPtr(n, slot, key, addr, a.Transid())
	a.Dirty(n)
	return nil
}

// insertNewRoot grows the tree: a new root at level pointing at the old one.
// mirrors insert_new_root
func (t *Tree) insertNewRoot(a Allocator, p *Path, level int) error {
	if level >= ondisk.MaxLevel {
		return fmt.Errorf("tree would exceed %d levels: %w", ondisk.MaxLevel, errInternal)
	}
	lower := p.Nodes[level-1]
	c, err := t.newBlock(a, level)
	if err != nil {
		return err
	}
	nodeInsertPtr(c, 0, firstKey(lower), lower.Addr, lower.Generation())
	a.Dirty(c)
	t.setRoot(c)
	p.Nodes[level], p.Slots[level] = c, 0
	return nil
}

// splitNode makes room in the path's internal node at level: by pushing
// pointers into a sibling if that frees enough, else by splitting it in two
// (growing a new root if it is the root). mirrors split_node
func (t *Tree) splitNode(a Allocator, p *Path, level int) error {
	c := p.Nodes[level]
	if p.parent(level) == nil {
		if err := t.insertNewRoot(a, p, level+1); err != nil {
			return err
		}
	} else {
		pushed, err := t.pushNodesForInsert(a, p, level)
		if err != nil {
			return err
		}
		c = p.Nodes[level]
		if pushed && numItems(c) < maxPtrs(c)-3 {
			return nil
		}
	}
	nr := numItems(c)
	mid := (nr + 1) / 2
	split, err := t.newBlock(a, level)
	if err != nil {
		return err
	}
	copyNodePtrs(split, 0, c, mid, nr-mid)
	setNumItems(split, nr-mid)
	setNumItems(c, mid)
	clear(c.Data[hdrSize+mid*keyPtrSz : hdrSize+nr*keyPtrSz])
	a.Dirty(c)
	a.Dirty(split)
	if err := t.insertPtr(a, p, level+1, p.Slots[level+1]+1, firstKey(split), split.Addr); err != nil {
		return err
	}
	if p.Slots[level] >= mid {
		p.Slots[level] -= mid
		p.Nodes[level] = split
		p.Slots[level+1]++
	}
	return nil
}

// pushNodesForInsert tries to make room in the path's node at level by
// moving pointers into its left or right sibling; it reports whether it moved
// any. mirrors push_nodes_for_insert
func (t *Tree) pushNodesForInsert(a Allocator, p *Path, level int) (bool, error) {
	mid := p.Nodes[level]
	parent := p.parent(level)
	if parent == nil {
		return false, nil
	}
	pslot := p.Slots[level+1]
	origSlot := p.Slots[level]
	if pslot > 0 {
		left, err := t.ReadChild(parent, pslot-1)
		if err != nil {
			return false, err
		}
		if leftNr := numItems(left); leftNr < maxPtrs(left)-1 {
			if left, err = t.cowBlock(a, left, parent, pslot-1); err != nil {
				return false, err
			}
			if pushNodeLeft(a, left, mid, false) {
				origSlot += leftNr
				setNodeKey(parent, pslot, firstKey(mid))
				a.Dirty(parent)
				if numItems(left) > origSlot {
					p.Nodes[level] = left
					p.Slots[level+1]--
					p.Slots[level] = origSlot
				} else {
					p.Slots[level] = origSlot - numItems(left)
				}
				return true, nil
			}
		}
	}
	if pslot+1 < numItems(parent) {
		right, err := t.ReadChild(parent, pslot+1)
		if err != nil {
			return false, err
		}
		if numItems(right) < maxPtrs(right)-1 {
			if right, err = t.cowBlock(a, right, parent, pslot+1); err != nil {
				return false, err
			}
			if balanceNodeRight(a, right, mid) {
				setNodeKey(parent, pslot+1, firstKey(right))
				a.Dirty(parent)
				if numItems(mid) <= origSlot {
					p.Nodes[level] = right
					p.Slots[level+1]++
					p.Slots[level] = origSlot - numItems(mid)
				}
				return true, nil
			}
		}
	}
	return false, nil
}

// splitLeaf makes dataSize bytes free in the path's leaf for an insert at
// its slot (or, with extend, for growing the item at its slot): first by
// pushing items into the neighbours, then by splitting the leaf, twice if the
// new item fits in neither half. mirrors split_leaf
func (t *Tree) splitLeaf(a Allocator, p *Path, key ondisk.Key, dataSize int, extend bool) error {
	l := p.Nodes[0]
	slot := p.Slots[0]
	if dataSize > 0 && p.Nodes[1] != nil {
		spaceNeeded := dataSize
		if slot < numItems(l) {
			spaceNeeded -= leafFree(l)
		}
		pushed, err := t.pushLeafRight(a, p, spaceNeeded, spaceNeeded, false, 0)
		if err != nil {
			return err
		}
		if !pushed {
			spaceNeeded = dataSize
			if slot > 0 {
				spaceNeeded -= leafFree(l)
			}
			if _, err := t.pushLeafLeft(a, p, spaceNeeded, spaceNeeded, false, maxSlot); err != nil {
				return err
			}
		}
		if leafFree(p.Nodes[0]) >= dataSize {
			return nil
		}
	}
	if p.Nodes[1] == nil {
		if err := t.insertNewRoot(a, p, 1); err != nil {
			return err
		}
	}
	triedAvoidDouble, doubles := false, 0
	for {
		l, slot = p.Nodes[0], p.Slots[0]
		nr := numItems(l)
		split, mid, tryPush := chooseLeafSplit(l, slot, dataSize, extend, triedAvoidDouble)
		if tryPush {
			triedAvoidDouble = true
			if err := t.pushForDoubleSplit(a, p, dataSize); err != nil {
				return err
			}
			if leafFree(p.Nodes[0]) >= dataSize {
				return nil
			}
			continue
		}
		right, err := t.newBlock(a, 0)
		if err != nil {
			return err
		}
		if split == 0 {
			// the new item goes alone into the new leaf
			if mid <= slot {
				err = t.insertPtr(a, p, 1, p.Slots[1]+1, key, right.Addr)
				p.Slots[1]++
			} else {
				err = t.insertPtr(a, p, 1, p.Slots[1], key, right.Addr)
				if err == nil && p.Slots[1] == 0 {
					p.fixupLowKeys(a, key, 1)
				}
			}
			p.Nodes[0], p.Slots[0] = right, 0
			return err
		}
		if err := t.copyForSplit(a, p, l, right, slot, mid, nr); err != nil {
			return err
		}
		if split == 1 {
			return nil
		}
		if doubles++; doubles > 1 {
			return fmt.Errorf("leaf split needs a third leaf: %w", errInternal)
		}
	}
}

// maxSlot is "no limit" for pushLeafLeft's maxSlot.
const maxSlot = int(^uint32(0) >> 1)

// chooseLeafSplit decides where to split leaf l for dataSize bytes at slot:
// split 1 moves items [mid, nr) to a new right leaf, 2 does that and then
// splits again, 0 makes a new empty leaf for the new item (before l if mid >
// slot, else after). tryPush asks to first push items away so the slot ends
// up at an edge of the leaf (avoiding a double split).
func chooseLeafSplit(l *diskio.Node, slot, dataSize int, extend, triedAvoidDouble bool) (split, mid int, tryPush bool) {
	nr := numItems(l)
	lds := leafDataSize(l)
	split, mid = 1, (nr+1)/2
	tooBigFromSlot := func() bool {
		return mid != nr && leafSpaceUsed(l, mid, nr-mid)+dataSize > lds
	}
	if mid <= slot {
		if nr == 1 || leafSpaceUsed(l, mid, nr-mid)+dataSize > lds {
			if slot >= nr {
				return 0, mid, false
			}
			mid = slot
			if tooBigFromSlot() {
				if dataSize > 0 && !triedAvoidDouble {
					return 0, 0, true
				}
				split = 2
			}
		}
		return split, mid, false
	}
	if leafSpaceUsed(l, 0, mid)+dataSize > lds {
		switch {
		case !extend && dataSize > 0 && slot == 0:
			return 0, mid, false
		case (extend || dataSize == 0) && slot == 0:
			mid = 1
		default:
			mid = slot
			if tooBigFromSlot() {
				if dataSize > 0 && !triedAvoidDouble {
					return 0, 0, true
				}
				split = 2
			}
		}
	}
	return split, mid, false
}

// copyForSplit moves items [mid, nr) of l into the new leaf right, links it
// after l and moves the path along if its slot went too. mirrors copy_for_split
func (t *Tree) copyForSplit(a Allocator, p *Path, l, right *diskio.Node, slot, mid, nr int) error {
	n := nr - mid
	lds := leafDataSize(l)
	dataEnd := leafDataEnd(l)
	dataCopy := itemDataEnd(l, mid) - dataEnd
	copyLeafItems(right, 0, l, mid, n)
	copyLeafData(right, lds-dataCopy, l, dataEnd, dataCopy)
	shift := lds - itemDataEnd(l, mid)
	for i := 0; i < n; i++ {
		setItemOffset(right, i, itemOffset(right, i)+shift)
	}
	setNumItems(right, n)
	setNumItems(l, mid)
	a.Dirty(right)
	a.Dirty(l)
	if err := t.insertPtr(a, p, 1, p.Slots[1]+1, firstKey(right), right.Addr); err != nil {
		return err
	}
	if mid <= slot {
		p.Nodes[0] = right
		p.Slots[0] -= mid
		p.Slots[1]++
	}
	return nil
}

// pushForDoubleSplit pushes the items after, then before, the path's slot
// into the neighbours, hoping to put the slot at an edge of its leaf.
// mirrors push_for_double_split
func (t *Tree) pushForDoubleSplit(a Allocator, p *Path, dataSize int) error {
	slot := p.Slots[0]
	spaceNeeded := dataSize
	if slot < numItems(p.Nodes[0]) {
		spaceNeeded -= leafFree(p.Nodes[0])
	}
	if _, err := t.pushLeafRight(a, p, 1, spaceNeeded, false, slot); err != nil {
		return err
	}
	nr := numItems(p.Nodes[0])
	if p.Slots[0] == 0 || p.Slots[0] == nr || leafFree(p.Nodes[0]) >= dataSize {
		return nil
	}
	slot = p.Slots[0]
	spaceNeeded = dataSize
	if slot > 0 {
		spaceNeeded -= leafFree(p.Nodes[0])
	}
	_, err := t.pushLeafLeft(a, p, 1, spaceNeeded, false, slot)
	return err
}
