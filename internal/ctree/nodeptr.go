package ctree

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Raw internal-node helpers: an internal node is the header followed by
// nritems key pointers (key, blockptr, generation) in key order.

// maxPtrs is how many key pointers fit in n. mirrors BTRFS_NODEPTRS_PER_BLOCK
func maxPtrs(n *diskio.Node) int { return (len(n.Data) - hdrSize) / keyPtrSz }

func setNodeKey(n *diskio.Node, i int, k ondisk.Key) { k.Encode(n.Data[hdrSize+i*keyPtrSz:]) }

func nodeBlockPtr(n *diskio.Node, i int) ondisk.LogicalAddr {
	return ondisk.LogicalAddr(le.Uint64(n.Data[hdrSize+i*keyPtrSz+17:]))
}

// setNodePtr points slot i at addr with generation gen, keeping its key.
func setNodePtr(n *diskio.Node, i int, addr ondisk.LogicalAddr, gen ondisk.Generation) {
	p := hdrSize + i*keyPtrSz
	le.PutUint64(n.Data[p+17:], uint64(addr))
	le.PutUint64(n.Data[p+25:], uint64(gen))
}

// moveNodePtrs moves count key pointers within a node.
func moveNodePtrs(n *diskio.Node, dstSlot, srcSlot, count int) {
	if count > 0 {
		copy(n.Data[hdrSize+dstSlot*keyPtrSz:hdrSize+(dstSlot+count)*keyPtrSz],
			n.Data[hdrSize+srcSlot*keyPtrSz:hdrSize+(srcSlot+count)*keyPtrSz])
	}
}

// copyNodePtrs copies count key pointers from src to dst.
func copyNodePtrs(dst *diskio.Node, dstSlot int, src *diskio.Node, srcSlot, count int) {
	if count > 0 {
		copy(dst.Data[hdrSize+dstSlot*keyPtrSz:hdrSize+(dstSlot+count)*keyPtrSz],
			src.Data[hdrSize+srcSlot*keyPtrSz:hdrSize+(srcSlot+count)*keyPtrSz])
	}
}

// nodeInsertPtr inserts a key pointer at slot; the caller has checked the room.
func nodeInsertPtr(n *diskio.Node, slot int, key ondisk.Key, addr ondisk.LogicalAddr, gen ondisk.Generation) {
	nr := numItems(n)
	moveNodePtrs(n, slot+1, slot, nr-slot)
	setNodeKey(n, slot, key)
	setNodePtr(n, slot, addr, gen)
	setNumItems(n, nr+1)
}

// nodeDeletePtr removes the key pointer at slot.
func nodeDeletePtr(n *diskio.Node, slot int) {
	nr := numItems(n)
	moveNodePtrs(n, slot, slot+1, nr-slot-1)
	setNumItems(n, nr-1)
}

// firstKey is the key of slot 0 of a leaf or node.
func firstKey(n *diskio.Node) ondisk.Key { return n.Key(0) }
