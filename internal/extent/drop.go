package extent

import (
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// DropTree queues the drop of every reference tree t holds, in one go:
// blocks only t references are walked and freed with everything they
// reference; at blocks shared with other trees the walk stops and only t's
// reference to them goes. Before that, a shared block t owns (and the
// blocks below it that t owns) is switched to FULL_BACKREF so that the trees
// still sharing it keep finding their references once t is gone.
// rootKeyOffset is the offset of t's ROOT_ITEM key (the transid of the
// snapshot that created it, 0 for a plain subvolume). The caller removes
// the ROOT_ITEM. mirrors btrfs_drop_snapshot (walk_down_tree / walk_up_tree)
func (m *Manager) DropTree(tr Trees, t *ctree.Tree, root Root, rootKeyOffset uint64) error {
	top, err := rootNode(t)
	if err != nil {
		return err
	}
	d := &dropper{m: m, tr: tr, t: t, root: root, offset: ondisk.Generation(rootKeyOffset)}
	return d.drop(top, 0, false)
}

type dropper struct {
	m      *Manager
	tr     Trees
	t      *ctree.Tree
	root   Root
	offset ondisk.Generation
}

// drop releases the reference to n held by its parent (parentAddr when the
// parent is FULL_BACKREF, else by the tree), walking into n first when that
// is the last reference.
func (d *dropper) drop(n *diskio.Node, parentAddr ondisk.LogicalAddr, parentFull bool) error {
	refs, flags, err := d.m.LookupInfo(d.tr, n.Addr)
	if err != nil {
		return err
	}
	if refs == 0 {
		return corrupt("drop tree %d: block %d has no references", d.root.ID, uint64(n.Addr))
	}
	var parent ondisk.LogicalAddr
	if parentFull {
		parent = parentAddr
	}
	ref := delayedref.TreeRef(d.root.ID, parent)
	if refs > 1 {
		// The kernel tests generation > root_key.offset: only the root copy
		// is as old as the snapshot there. Here the snapshot's transaction
		// goes on after it was made, so the tree may own more blocks of
		// that generation; owning the block is what matters
		// (updateBackref checks it).
		if n.Generation() >= d.offset {
			if err := d.updateBackref(n); err != nil {
				return err
			}
		}
		return d.m.Refs.Add(n.Addr, uint64(d.m.NodeSize), n.Level(), ref, -1)
	}
	full := flags&BlockFlagFullBackref != 0
	if !full && n.Owner() != d.root.ID {
		return corrupt("drop tree %d: block %d owned by %d is not FULL_BACKREF", d.root.ID, uint64(n.Addr), n.Owner())
	}
	if n.IsLeaf() {
		if err := d.m.ModRefs(d.root, n, full, -1); err != nil {
			return err
		}
	} else {
		for i := 0; i < n.NumItems(); i++ {
			c, err := d.t.ReadChild(n, i)
			if err != nil {
				return err
			}
			if err := d.drop(c, n.Addr, full); err != nil {
				return err
			}
		}
	}
	return d.m.Refs.Add(n.Addr, uint64(d.m.NodeSize), n.Level(), ref, -1)
}

// updateBackref switches n and the blocks below it that the dropped tree
// owns to FULL_BACKREF. mirrors the UPDATE_BACKREF stage of walk_down_proc
func (d *dropper) updateBackref(n *diskio.Node) error {
	if n.Owner() != d.root.ID {
		return nil
	}
	_, flags, err := d.m.LookupInfo(d.tr, n.Addr)
	if err != nil {
		return err
	}
	if flags&BlockFlagFullBackref == 0 {
		if err := d.m.ModRefs(d.root, n, true, 1); err != nil {
			return err
		}
		if err := d.m.ModRefs(d.root, n, false, -1); err != nil {
			return err
		}
		if err := d.m.Refs.SetFlags(n.Addr, uint64(d.m.NodeSize), n.Level(), false, BlockFlagFullBackref); err != nil {
			return err
		}
	}
	if n.IsLeaf() {
		return nil
	}
	for i := 0; i < n.NumItems(); i++ {
		if n.KeyPtr(i).Generation < d.offset {
			continue // older than the tree: not its own
		}
		c, err := d.t.ReadChild(n, i)
		if err != nil {
			return err
		}
		if err := d.updateBackref(c); err != nil {
			return err
		}
	}
	return nil
}

// rootNode reads t's root block.
func rootNode(t *ctree.Tree) (*diskio.Node, error) {
	p, _, err := t.Search(ondisk.Key{})
	if err != nil {
		return nil, err
	}
	n := p.Nodes[t.Level]
	if n == nil || n.Addr != t.Root {
		return nil, corrupt("tree %d: root %d not found at level %d", t.ID, uint64(t.Root), t.Level)
	}
	return n, nil
}
