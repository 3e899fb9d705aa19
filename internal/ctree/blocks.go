package ctree

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// The tree keeps every block it got from the Allocator (new blocks and COW
// copies) in t.mem until it is freed, replaced by another COW, or the
// transaction has written it and calls ForgetBlocks. Reads look there first:
// such blocks are not on disk yet and the reader's cache may evict them (the
// kernel pins dirty extent buffers for the same reason).

// memNode returns the in-memory block at addr if it has generation gen (0: any).
func (t *Tree) memNode(addr ondisk.LogicalAddr, gen ondisk.Generation) *diskio.Node {
	n := t.mem[addr]
	if n == nil || (gen != 0 && n.Generation() != gen) {
		return nil
	}
	return n
}

func (t *Tree) remember(n *diskio.Node) {
	if t.mem == nil {
		t.mem = make(map[ondisk.LogicalAddr]*diskio.Node)
	}
	t.mem[n.Addr] = n
}

func (t *Tree) forget(n *diskio.Node) {
	if t.mem[n.Addr] == n {
		delete(t.mem, n.Addr)
	}
}

// ForgetBlocks drops the tree's references to the blocks the write path
// created or COWed. Call it once the transaction has written them (their
// bytes are then on disk and reads go through R); never before.
func (t *Tree) ForgetBlocks() { t.mem = nil }

// setRoot makes n the root block and tells the transaction.
func (t *Tree) setRoot(n *diskio.Node) {
	t.Root, t.Level, t.Gen = n.Addr, n.Level(), n.Generation()
	t.RootChanged = true
	if t.OnRootChange != nil {
		t.OnRootChange(t)
	}
}

// newBlock asks the allocator for an empty block at level and checks it.
func (t *Tree) newBlock(a Allocator, level int) (*diskio.Node, error) {
	n, err := a.NewBlock(t.ID, level)
	if err != nil {
		return nil, fmt.Errorf("allocate level %d block: %w", level, err)
	}
	if n.Level() != level || n.NumItems() != 0 || n.Generation() != a.Transid() ||
		len(n.Data) < ondisk.HeaderSize+2*ondisk.KeyPtrSize {
		return nil, fmt.Errorf("new block %d: level %d nritems %d gen %d: %w",
			uint64(n.Addr), n.Level(), n.NumItems(), n.Generation(), errInternal)
	}
	t.remember(n)
	return n, nil
}

// freeBlock removes n from the tree's blocks and releases it.
func (t *Tree) freeBlock(a Allocator, n *diskio.Node) error {
	t.forget(n)
	if err := a.FreeBlock(t.ID, n); err != nil {
		return fmt.Errorf("free block %d: %w", uint64(n.Addr), err)
	}
	return nil
}

// NewEmptyTree creates a tree for owner whose root is one empty leaf. The
// caller sets R (for reading the tree after the transaction wrote it) and
// records the root (RootChanged is set).
func NewEmptyTree(a Allocator, owner ondisk.ObjectID) (*Tree, error) {
	t := &Tree{ID: owner}
	n, err := t.newBlock(a, 0)
	if err != nil {
		return nil, fmt.Errorf("new tree %s: %w", ondisk.TreeName(owner), err)
	}
	t.setRoot(n)
	return t, nil
}
