package diskio

import (
	"encoding/binary"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Node is one tree block in memory (the kernel's extent_buffer). Accessors
// decode from Data on each call, so writers may edit Data in place.
type Node struct {
	Addr ondisk.LogicalAddr
	Data []byte
}

// Header decodes the node header.
func (n *Node) Header() ondisk.Header { return ondisk.DecodeHeader(n.Data) }

// Level is 0 for leaves.
func (n *Node) Level() int { return int(n.Data[0x64]) }

// IsLeaf reports whether the node is a leaf.
func (n *Node) IsLeaf() bool { return n.Data[0x64] == 0 }

// NumItems is nritems.
func (n *Node) NumItems() int { return int(binary.LittleEndian.Uint32(n.Data[0x60:])) }

// Owner is the tree that created the block.
func (n *Node) Owner() ondisk.ObjectID {
	return ondisk.ObjectID(binary.LittleEndian.Uint64(n.Data[0x58:]))
}

// Generation is the transaction that wrote the block.
func (n *Node) Generation() ondisk.Generation {
	return ondisk.Generation(binary.LittleEndian.Uint64(n.Data[0x50:]))
}

// Item returns the i-th item header of a leaf.
func (n *Node) Item(i int) ondisk.ItemHeader { return ondisk.DecodeItemHeader(n.Data, i) }

// Key returns the i-th key of a leaf or node.
func (n *Node) Key(i int) ondisk.Key {
	if n.IsLeaf() {
		return ondisk.DecodeKey(n.Data[ondisk.HeaderSize+i*ondisk.ItemHeaderSize:])
	}
	return ondisk.DecodeKey(n.Data[ondisk.HeaderSize+i*ondisk.KeyPtrSize:])
}

// ItemData returns the i-th item's data, a slice of Data.
func (n *Node) ItemData(i int) []byte {
	it := n.Item(i)
	start := ondisk.HeaderSize + int(it.Offset)
	return n.Data[start : start+int(it.Size) : start+int(it.Size)]
}

// KeyPtr returns the i-th key pointer of an internal node.
func (n *Node) KeyPtr(i int) ondisk.KeyPtr { return ondisk.DecodeKeyPtr(n.Data, i) }

// LeafDataSize is the bytes available for item headers and data in a leaf.
func LeafDataSize(nodesize uint32) int { return int(nodesize) - ondisk.HeaderSize }

// MaxKeyPtrs is how many key pointers fit in an internal node.
func MaxKeyPtrs(nodesize uint32) int { return LeafDataSize(nodesize) / ondisk.KeyPtrSize }

// LeafFreeSpace is the unused bytes of a leaf. mirrors btrfs_leaf_free_space
func (n *Node) LeafFreeSpace() int {
	nr := n.NumItems()
	used := 0
	if nr > 0 {
		first := n.Item(0)
		last := n.Item(nr - 1)
		used = int(first.Offset+first.Size) - int(last.Offset) + nr*ondisk.ItemHeaderSize
	}
	return LeafDataSize(uint32(len(n.Data))) - used
}
