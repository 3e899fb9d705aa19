package freespace

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// Editor is the B-tree access the free space tree needs (the writer adapts the
// real tree in a transaction).
type Editor interface {
	// Range calls fn for the items in [min,max] in key order until fn returns
	// false; fn may not modify the tree, and data is only valid during the call.
	Range(min, max ondisk.Key, fn func(k ondisk.Key, data []byte) bool) error
	Insert(k ondisk.Key, data []byte) error
	Delete(k ondisk.Key) error
	// Update replaces the data of an existing item (same size for bitmaps and info).
	Update(k ondisk.Key, data []byte) error
}

// BlockGroup is the part of a block group the free space tree knows: its
// logical range.
type BlockGroup struct {
	Start  ondisk.LogicalAddr
	Length uint64
}

// Extent is a range of free space.
type Extent struct {
	Start  ondisk.LogicalAddr
	Length uint64
}

// End is the first address after the extent.
func (x Extent) End() ondisk.LogicalAddr { return x.Start + ondisk.LogicalAddr(x.Length) }

// Item is one free space tree item to insert.
type Item struct {
	Key  ondisk.Key
	Data []byte
}
