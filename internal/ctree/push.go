package ctree

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
)

// Moving items between sibling leaves and pointers between sibling nodes.
// Siblings are always children of the same parent, so only the parent's key
// for the right-hand block changes (and it is never slot 0).

// checkSiblingKeys refuses to merge blocks whose keys overlap (corruption).
// mirrors check_sibling_keys
func checkSiblingKeys(left, right *diskio.Node) error {
	ln, rn := numItems(left), numItems(right)
	if ln == 0 || rn == 0 {
		return nil
	}
	if lk, rk := left.Key(ln-1), right.Key(0); lk.Compare(rk) >= 0 {
		return &diskio.BlockError{Op: "merge siblings", Tree: left.Owner(), Addr: right.Addr,
			Err: diskio.Corruptf("left sibling %d last key %v >= first key %v", uint64(left.Addr), lk, rk)}
	}
	return nil
}

// pushLeafRight moves items from the end of the path's leaf into its right
// sibling so that the leaf (or the sibling, if the insert position moves
// there) gains room. dataSize is the room the sibling must have to be worth
// trying, minDataSize the room reserved at the path's slot. With empty it
// tries to move every item (to delete the leaf); else it keeps at least one
// and items before minSlot. It reports whether anything moved.
// mirrors push_leaf_right / __push_leaf_right
func (t *Tree) pushLeafRight(a Allocator, p *Path, minDataSize, dataSize int, empty bool, minSlot int) (bool, error) {
	upper := p.Nodes[1]
	if upper == nil {
		return false, nil
	}
	slot := p.Slots[1]
	if slot >= numItems(upper)-1 {
		return false, nil
	}
	left := p.Nodes[0]
	leftNr := numItems(left)
	if leftNr == 0 {
		return false, nil
	}
	right, err := t.ReadChild(upper, slot+1)
	if err != nil {
		return false, err
	}
	if leafFree(right) < dataSize {
		return false, nil
	}
	if err := checkSiblingKeys(left, right); err != nil {
		return false, err
	}
	if right, err = t.cowBlock(a, right, upper, slot+1); err != nil {
		return false, err
	}
	if p.Slots[0] == leftNr && !empty {
		// appending after the leaf's last key: the right sibling has the
		// room, so insert at its start and leave this leaf alone
		p.Nodes[0], p.Slots[0] = right, 0
		p.Slots[1]++
		return true, nil
	}
	freeSpace := leafFree(right)
	first := 0
	if !empty {
		first = max(1, minSlot)
	}
	pushSpace, pushItems := 0, 0
	if p.Slots[0] >= leftNr {
		pushSpace += minDataSize
	}
	for i := leftNr - 1; i >= first; i-- {
		if !empty && pushItems > 0 {
			if p.Slots[0] > i {
				break
			}
			if p.Slots[0] == i && leafFree(left)+pushSpace*2 > freeSpace {
				break
			}
		}
		if p.Slots[0] == i {
			pushSpace += minDataSize
		}
		sz := itemSize(left, i)
		if sz+itemSz+pushSpace > freeSpace {
			break
		}
		pushItems++
		pushSpace += sz + itemSz
	}
	if pushItems == 0 {
		return false, nil
	}

	rightNr := numItems(right)
	lds := leafDataSize(right)
	leftEnd := leafDataEnd(left)
	moveBytes := itemDataEnd(left, leftNr-pushItems) - leftEnd
	rightEnd := leafDataEnd(right)
	moveLeafData(right, rightEnd-moveBytes, rightEnd, lds-rightEnd)
	copyLeafData(right, lds-moveBytes, left, leftEnd, moveBytes)
	moveLeafItems(right, pushItems, 0, rightNr)
	copyLeafItems(right, 0, left, leftNr-pushItems, pushItems)
	rightNr += pushItems
	setNumItems(right, rightNr)
	repackOffsets(right, rightNr)
	leftNr -= pushItems
	setNumItems(left, leftNr)
	a.Dirty(left)
	a.Dirty(right)
	setNodeKey(upper, slot+1, firstKey(right))
	a.Dirty(upper)

	if p.Slots[0] >= leftNr {
		p.Slots[0] -= leftNr
		p.Nodes[0] = right
		p.Slots[1]++
	}
	return true, nil
}

// pushLeafLeft moves items from the start of the path's leaf into its left
// sibling; the arguments are as for pushLeafRight, with at most maxSlot
// items moved. mirrors push_leaf_left / __push_leaf_left
func (t *Tree) pushLeafLeft(a Allocator, p *Path, minDataSize, dataSize int, empty bool, maxSlot int) (bool, error) {
	upper := p.Nodes[1]
	slot := p.Slots[1]
	if upper == nil || slot == 0 {
		return false, nil
	}
	right := p.Nodes[0]
	rightNr := numItems(right)
	if rightNr == 0 {
		return false, nil
	}
	left, err := t.ReadChild(upper, slot-1)
	if err != nil {
		return false, err
	}
	if leafFree(left) < dataSize {
		return false, nil
	}
	if err := checkSiblingKeys(left, right); err != nil {
		return false, err
	}
	if left, err = t.cowBlock(a, left, upper, slot-1); err != nil {
		return false, err
	}
	freeSpace := leafFree(left)
	last := rightNr
	if !empty {
		last = rightNr - 1
	}
	last = min(last, maxSlot)
	pushSpace, pushItems := 0, 0
	for i := 0; i < last; i++ {
		if !empty && pushItems > 0 {
			if p.Slots[0] < i {
				break
			}
			if p.Slots[0] == i && leafFree(right)+pushSpace*2 > freeSpace {
				break
			}
		}
		if p.Slots[0] == i {
			pushSpace += minDataSize
		}
		sz := itemSize(right, i)
		if sz+itemSz+pushSpace > freeSpace {
			break
		}
		pushItems++
		pushSpace += sz + itemSz
	}
	if pushItems == 0 {
		return false, nil
	}

	oldLeftNr := numItems(left)
	lds := leafDataSize(left)
	leftEnd := leafDataEnd(left)
	copyLeafItems(left, oldLeftNr, right, 0, pushItems)
	lastOff := itemOffset(right, pushItems-1)
	moveBytes := lds - lastOff
	copyLeafData(left, leftEnd-moveBytes, right, lastOff, moveBytes)
	shift := lds - leftEnd
	for i := oldLeftNr; i < oldLeftNr+pushItems; i++ {
		setItemOffset(left, i, itemOffset(left, i)-shift)
	}
	setNumItems(left, oldLeftNr+pushItems)
	if pushItems < rightNr {
		rightEnd := leafDataEnd(right)
		rest := lastOff - rightEnd
		moveLeafData(right, lds-rest, rightEnd, rest)
		moveLeafItems(right, 0, pushItems, rightNr-pushItems)
	}
	rightNr -= pushItems
	setNumItems(right, rightNr)
	repackOffsets(right, rightNr)
	a.Dirty(left)
	a.Dirty(right)
	if rightNr > 0 {
		p.fixupLowKeys(a, firstKey(right), 1)
	}

	if p.Slots[0] < pushItems {
		p.Slots[0] += oldLeftNr
		p.Nodes[0] = left
		p.Slots[1]--
	} else {
		p.Slots[0] -= pushItems
	}
	return true, nil
}

// pushNodeLeft moves pointers from the start of src to the end of its left
// sibling dst. With empty it may empty src (else it leaves src at least 8).
// It reports whether anything moved. The caller fixes the parent's key for
// src. mirrors push_node_left
func pushNodeLeft(a Allocator, dst, src *diskio.Node, empty bool) bool {
	srcNr, dstNr := numItems(src), numItems(dst)
	push := maxPtrs(dst) - dstNr
	if !empty && srcNr <= 8 || push <= 0 {
		return false
	}
	if empty {
		push = min(srcNr, push)
		if push < srcNr && srcNr-push < 8 {
			// leave at least 8 pointers in src if not emptying it
			if push <= 8 {
				return false
			}
			push -= 8
		}
	} else {
		push = min(srcNr-8, push)
	}
	copyNodePtrs(dst, dstNr, src, 0, push)
	moveNodePtrs(src, 0, push, srcNr-push)
	setNumItems(src, srcNr-push)
	setNumItems(dst, dstNr+push)
	a.Dirty(src)
	a.Dirty(dst)
	return true
}

// balanceNodeRight moves up to half of src's pointers (from its end) to the
// start of its right sibling dst, never emptying src. The caller fixes the
// parent's key for dst. mirrors balance_node_right
func balanceNodeRight(a Allocator, dst, src *diskio.Node) bool {
	srcNr, dstNr := numItems(src), numItems(dst)
	push := maxPtrs(dst) - dstNr
	if push <= 0 || srcNr < 4 {
		return false
	}
	maxPush := srcNr/2 + 1
	if maxPush >= srcNr {
		return false
	}
	push = min(push, maxPush)
	moveNodePtrs(dst, push, 0, dstNr)
	copyNodePtrs(dst, 0, src, srcNr-push, push)
	setNumItems(src, srcNr-push)
	setNumItems(dst, dstNr+push)
	a.Dirty(src)
	a.Dirty(dst)
	return true
}
