package ctreetest

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Snapshot writes every live block, committed or not, checksummed, to a
// scratch device and returns t as read from there by a fresh diskio.Reader:
// every block it reads passes the tree-checker, and nothing of the write
// path's in-memory state is used.
func (a *Alloc) Snapshot(t *ctree.Tree) (*ctree.Tree, error) {
	end := ondisk.LogicalAddr(FirstAddr)
	for addr := range a.live {
		end = max(end, addr+ondisk.LogicalAddr(a.NodeSize))
	}
	dev := blockdev.NewMemory(int64(end))
	buf := make([]byte, a.NodeSize)
	for addr, b := range a.live {
		copy(buf, b.Node.Data)
		csum.CRC32C.SetBlock(buf)
		if _, err := dev.WriteAt(buf, int64(addr)); err != nil {
			return nil, err
		}
	}
	return &ctree.Tree{R: a.newReader(dev), ID: t.ID, Root: t.Root, Level: t.Level, Gen: t.Gen}, nil
}

// CheckTree verifies t as the kernel's tree-checker would and more: every
// block reads back through diskio (checksum, bytenr, fsid, owner, level and
// generation expected by the parent, key order, item data packed at the end
// of the leaf, parent key == child's first key), no leaf but the root is
// empty, no internal node is, keys increase across leaves, no block is newer
// than the transaction, and the blocks reachable from the root are exactly
// the live blocks owned by the tree (nothing leaked, nothing freed in use).
func (a *Alloc) CheckTree(t *ctree.Tree) error {
	if err := a.Err(); err != nil {
		return err
	}
	st, err := a.Snapshot(t)
	if err != nil {
		return err
	}
	reach := map[ondisk.LogicalAddr]bool{}
	var prev *ondisk.Key
	err = st.Walk(func(n *diskio.Node, err error) error {
		if err != nil {
			return err
		}
		if reach[n.Addr] {
			return fmt.Errorf("block %d reached twice", n.Addr)
		}
		reach[n.Addr] = true
		if n.Generation() > a.transid {
			return fmt.Errorf("block %d has generation %d > transid %d", n.Addr, n.Generation(), a.transid)
		}
		if n.Owner() != t.ID {
			return fmt.Errorf("block %d owned by %d, not %d", n.Addr, n.Owner(), t.ID)
		}
		if !n.IsLeaf() {
			return nil
		}
		if n.NumItems() == 0 && n.Addr != t.Root {
			return fmt.Errorf("empty leaf %d is not the root", n.Addr)
		}
		for i := 0; i < n.NumItems(); i++ {
			k := n.Key(i)
			if prev != nil && prev.Compare(k) >= 0 {
				return fmt.Errorf("leaf %d slot %d: key %v after %v", n.Addr, i, k, *prev)
			}
			prev = &k
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("check tree %s (root %d level %d): %w", ondisk.TreeName(t.ID), t.Root, t.Level, err)
	}
	for addr, b := range a.live {
		if b.Owner == t.ID && !reach[addr] {
			return fmt.Errorf("check tree %s: block %d (level %d gen %d) leaked: live but unreachable",
				ondisk.TreeName(t.ID), addr, b.Node.Level(), b.Gen)
		}
	}
	for addr := range reach {
		if a.live[addr] == nil {
			return fmt.Errorf("check tree %s: block %d reachable but freed", ondisk.TreeName(t.ID), addr)
		}
	}
	return nil
}
