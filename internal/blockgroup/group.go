package blockgroup

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Group is one block group. mirrors struct btrfs_block_group
type Group struct {
	Start  ondisk.LogicalAddr
	Length uint64
	Flags  uint64
	Chunk  ondisk.Chunk

	used     uint64
	reserved uint64
	super    uint64
	superR   []Range
	free     RangeSet
	pinned   RangeSet
	// committing: pinned by the transaction being written (frozen by
	// FreezePinned); free once its superblock is on disk (UnpinCommitted).
	committing RangeSet

	// dirty: the BLOCK_GROUP_ITEM must be rewritten at commit.
	dirty bool
	// pending: created in this transaction; its chunk item, dev extents and
	// block group item are not inserted yet.
	pending bool
	// needsFST: the free space tree has no FREE_SPACE_INFO for it yet.
	needsFST bool
}

// End is the first address after the group.
func (g *Group) End() ondisk.LogicalAddr { return g.Start + ondisk.LogicalAddr(g.Length) }

// Contains reports whether addr lies in the group.
func (g *Group) Contains(addr ondisk.LogicalAddr) bool { return addr >= g.Start && addr < g.End() }

// Used is the bytes of extents with extent items (the item's used field).
func (g *Group) Used() uint64 { return g.used }

// Free is the bytes that can be allocated now.
func (g *Group) Free() uint64 { return g.free.Total() }

// Pinned is the bytes freed in the running transaction and in the one
// being committed.
func (g *Group) Pinned() uint64 { return g.pinned.Total() + g.committing.Total() }

// Reserved is the bytes allocated whose extent items are not inserted yet.
func (g *Group) Reserved() uint64 { return g.reserved }

// Super is the bytes excluded for superblock copies.
func (g *Group) Super() uint64 { return g.super }

// FreeRanges returns the free ranges (for tests and debugging).
func (g *Group) FreeRanges() []Range { return g.free.Ranges() }

// IsType reports whether the group holds kind (DATA, METADATA or SYSTEM;
// mixed groups hold both DATA and METADATA).
func (g *Group) IsType(kind uint64) bool { return g.Flags&kind != 0 }

// Pending reports whether the group was created in this transaction.
func (g *Group) Pending() bool { return g.pending }

func (g *Group) String() string {
	return fmt.Sprintf("block group %d+%d flags %#x used %d reserved %d pinned %d free %d super %d",
		uint64(g.Start), g.Length, g.Flags, g.used, g.reserved, g.Pinned(), g.free.Total(), g.super)
}

// check verifies the accounting invariant.
func (g *Group) check() error {
	sum := g.used + g.reserved + g.super + g.free.Total() + g.Pinned()
	if sum != g.Length {
		return fmt.Errorf("%v: states sum to %d, length %d", g, sum, g.Length)
	}
	return nil
}

// rel converts an address to an offset usable with the range sets.
func rel(a ondisk.LogicalAddr) uint64 { return uint64(a) }
