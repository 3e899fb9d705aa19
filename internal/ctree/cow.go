package ctree

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// cowBlock returns a writable version of n, which parent points at from
// pslot (parent nil: n is the root). When the allocator makes a copy, the
// parent's pointer (or the tree's root) moves to it with generation Transid.
// mirrors btrfs_cow_block
func (t *Tree) cowBlock(a Allocator, n, parent *diskio.Node, pslot int) (*diskio.Node, error) {
	c, err := a.CowBlock(t.ID, n, parent)
	if err != nil {
		return nil, fmt.Errorf("cow block %d: %w", uint64(n.Addr), err)
	}
	if c == n {
		return n, nil
	}
	if c.Level() != n.Level() || c.Generation() != a.Transid() || c.NumItems() != n.NumItems() {
		return nil, fmt.Errorf("cow block %d: copy %d has level %d gen %d: %w", uint64(n.Addr),
			uint64(c.Addr), c.Level(), c.Generation(), errInternal)
	}
	t.forget(n)
	t.remember(c)
	if parent == nil {
		t.setRoot(c)
	} else {
		setNodePtr(parent, pslot, c.Addr, a.Transid())
		a.Dirty(parent)
	}
	return c, nil
}

// parent returns the node above level on the path, nil at the root.
func (p *Path) parent(level int) *diskio.Node {
	if level+1 >= ondisk.MaxLevel {
		return nil
	}
	return p.Nodes[level+1]
}

// release empties the path (after an operation that leaves it unpositioned).
func (p *Path) release() {
	p.Nodes = [ondisk.MaxLevel]*diskio.Node{}
	p.Slots = [ondisk.MaxLevel]int{}
}

// cowPath makes every node on the path writable (a no-op for a path from
// SearchForWrite in this transaction), checking that the path still matches
// the tree.
func (p *Path) cowPath(a Allocator) error {
	t := p.tree
	if t == nil || p.Nodes[0] == nil {
		return fmt.Errorf("path is not positioned: %w", errInternal)
	}
	top := 0
	for top+1 < ondisk.MaxLevel && p.Nodes[top+1] != nil {
		top++
	}
	if p.Nodes[top].Addr != t.Root {
		return fmt.Errorf("stale path (root moved from %d to %d): %w",
			uint64(p.Nodes[top].Addr), uint64(t.Root), errInternal)
	}
	for l := top; l >= 0; l-- {
		var parent *diskio.Node
		pslot := 0
		if l < top {
			parent, pslot = p.Nodes[l+1], p.Slots[l+1]
			if pslot >= numItems(parent) || nodeBlockPtr(parent, pslot) != p.Nodes[l].Addr {
				return fmt.Errorf("stale path at level %d: %w", l, errInternal)
			}
		}
		c, err := t.cowBlock(a, p.Nodes[l], parent, pslot)
		if err != nil {
			return err
		}
		p.Nodes[l] = c
	}
	return nil
}

// fixupLowKeys sets the key that points at the path's node at level-1 to key,
// going up while that slot is the first of its node. mirrors fixup_low_keys
func (p *Path) fixupLowKeys(a Allocator, key ondisk.Key, level int) {
	for i := level; i < ondisk.MaxLevel && p.Nodes[i] != nil; i++ {
		setNodeKey(p.Nodes[i], p.Slots[i], key)
		a.Dirty(p.Nodes[i])
		if p.Slots[i] != 0 {
			break
		}
	}
}
