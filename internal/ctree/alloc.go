package ctree

import (
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Allocator is what the write path needs from the transaction: new blocks, COW copies, frees.
type Allocator interface {
	// Transid is the running transaction's generation.
	Transid() ondisk.Generation
	// NewBlock returns a fresh zeroed tree block for tree owner at level: header bytenr, fsid, chunk tree uuid,
	// generation = Transid, owner, level, flags (WRITTEN clear, backref rev MIXED) set; nritems 0. It is dirty.
	NewBlock(owner ondisk.ObjectID, level int) (*diskio.Node, error)
	// CowBlock returns a writable version of n for tree owner: n itself if n was created in this transaction
	// and not yet written, else a new block holding a copy (with refs handled by the allocator). parent is the
	// node that points at n (nil for the root). It is dirty.
	CowBlock(owner ondisk.ObjectID, n *diskio.Node, parent *diskio.Node) (*diskio.Node, error)
	// FreeBlock releases tree owner's reference to n (a block removed from the tree by a merge or root shrink).
	FreeBlock(owner ondisk.ObjectID, n *diskio.Node) error
	// Dirty marks a block modified in place (already returned by NewBlock/CowBlock in this transaction).
	Dirty(n *diskio.Node)
}

// ErrExists is returned (wrapped) when inserting a key that is already in the tree.
var ErrExists = errors.New("item already exists")

// ErrTooLarge is returned (wrapped) when an item would not fit in one leaf:
// its data may be at most nodesize - header - one item header bytes.
var ErrTooLarge = errors.New("item too large for a leaf")

// errInternal marks a broken write-path invariant (a bug here, not bad disk
// data); the operation stops before writing anything inconsistent further.
var errInternal = errors.New("ctree: internal error")

// MaxItemSize is the largest item data that fits in a leaf of nodesize bytes.
// mirrors BTRFS_MAX_ITEM_SIZE
func MaxItemSize(nodesize uint32) int {
	return diskio.LeafDataSize(nodesize) - ondisk.ItemHeaderSize
}
