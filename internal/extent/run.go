package extent

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// RunDelayedRefs applies every queued reference change to the extent tree,
// in bytenr order, until the queue is empty: applying changes modifies the
// extent tree and the free space tree, which allocates and frees tree
// blocks, which queues more changes. It returns how many heads it ran.
// mirrors btrfs_run_delayed_refs (count = 0: run everything)
func (m *Manager) RunDelayedRefs(tr Trees, transid ondisk.Generation) (int, error) {
	total := 0
	for {
		heads := m.Refs.TakeAll()
		if len(heads) == 0 {
			return total, nil
		}
		for _, h := range heads {
			if err := m.runHead(tr, h, transid); err != nil {
				return total, errorf("run delayed refs for", h.Bytenr, err)
			}
			total++
		}
	}
}

// runHead applies one extent's merged changes: insert the extent item of a
// new extent with its first reference, add references, set flags, then drop
// references (freeing the extent when the last goes).
// mirrors btrfs_run_delayed_refs_for_head + cleanup_ref_head
func (m *Manager) runHead(tr Trees, h *delayedref.Head, transid ondisk.Generation) error {
	mods := h.Mods()
	if h.MustInsert {
		if len(mods) == 0 || mods[0].Count < 0 {
			if len(mods) > 0 {
				return corrupt("new extent %d+%d: drops %v without an add", uint64(h.Bytenr), h.NumBytes, mods[0].Ref)
			}
			return m.releaseUnused(tr, h)
		}
		if err := m.insertExtent(tr, h, mods[0].Ref, mods[0].Count, transid); err != nil {
			return err
		}
		mods = mods[1:]
	}
	i := 0
	for ; i < len(mods) && mods[i].Count > 0; i++ {
		if err := m.addRef(tr, h, mods[i].Ref, mods[i].Count); err != nil {
			return err
		}
	}
	if !h.MustInsert && h.SetFlags != 0 {
		if err := m.setFlags(tr, h); err != nil {
			return err
		}
	}
	for ; i < len(mods); i++ {
		freed, err := m.dropRef(tr, h, mods[i].Ref, -mods[i].Count)
		if err != nil {
			return err
		}
		if freed && i+1 < len(mods) {
			return corrupt("extent %d freed with %d drops left", uint64(h.Bytenr), len(mods)-i-1)
		}
	}
	return nil
}

// releaseUnused handles an extent allocated in this transaction whose
// references all went away before commit: it never gets an extent item;
// its space (which may have been written) is reusable after the commit.
func (m *Manager) releaseUnused(tr Trees, h *delayedref.Head) error {
	if h.IsData {
		if err := m.DelCsums(tr, h.Bytenr, h.NumBytes); err != nil {
			return err
		}
	}
	if err := m.Groups.ReleasePinned(h.Bytenr, h.NumBytes); err != nil {
		return err
	}
	if m.Freed != nil {
		m.Freed(h.Bytenr, h.NumBytes, h.IsData)
	}
	return nil
}

// freeSpaceOps edits the free space tree through the block groups.
type freeSpaceOps struct {
	m *Manager
	t *ctree.Tree
	a ctree.Allocator
}

func (f *freeSpaceOps) fs() blockgroup.FreeSpace {
	return blockgroup.FreeSpace{M: f.m.Groups, Editor: blockgroup.TreeEditor{T: f.t, A: f.a}}
}

func (f *freeSpaceOps) remove(a ondisk.LogicalAddr, n uint64) error {
	if err := f.fs().Remove(a, n); err != nil {
		return fmt.Errorf("free space tree: remove %d+%d: %w", uint64(a), n, err)
	}
	return nil
}

func (f *freeSpaceOps) add(a ondisk.LogicalAddr, n uint64) error {
	if err := f.fs().Add(a, n); err != nil {
		return fmt.Errorf("free space tree: add %d+%d: %w", uint64(a), n, err)
	}
	return nil
}
