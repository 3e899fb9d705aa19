package ctree

import (
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// The write path (mirrors the kernel's ctree.c)
//
// Every change goes through a write search (SearchForWrite and the
// operations built on it) that COWs each block on the path from the root
// down before touching it: the Allocator returns the block itself if this
// transaction created it and has not written it, else a copy at a new
// address, and the parent's pointer (or Tree.Root) moves to the copy with
// generation Transid. Blocks of older generations are never modified.
//
// Inserting searches with the room it needs: full internal nodes are split
// on the way down (after trying to shift pointers into a sibling), and a
// leaf without room pushes items into its siblings, else splits, twice if
// the new item fits in neither half. A split root grows the tree by a level.
// Deleting searches with insLen < 0: internal nodes at most a quarter full
// are merged with or balanced against their siblings on the way down, and
// a root node with one child is replaced by it. A leaf emptied by a deletion
// is removed from its parent, one left under a third full is merged into
// its neighbours when they have room. Throughout, the tree stays valid for
// the kernel's tree-checker: keys strictly increasing, each parent key equal
// to its child's first key (fixupLowKeys), item data packed at the end of
// each leaf, no empty leaf but the root, no empty internal node.
//
// The tree keeps the blocks it got from the Allocator in memory (they are
// not on disk before the commit); the transaction writes them, then calls
// ForgetBlocks. An error from the Allocator or from reading a block in the
// middle of an operation can leave the tree half-modified, as in the kernel:
// the transaction must then be aborted, not committed.

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
