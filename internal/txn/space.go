package txn

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Space reservation, a simplified form of the kernel's space-info.c:
//
// A handle that is about to change the trees calls Reserve with the number
// of items it will touch; each item may need a new copy of every block on a
// path in two trees (nodesize * 2 * BTRFS_MAX_LEVEL, as
// btrfs_calc_insert_metadata_size). Reserve succeeds while the metadata
// groups' free space, less what other handles reserved and less the global
// reserve, covers that; else it adds a metadata chunk, else it commits to
// get back the space the transaction freed (the old copies of COWed blocks
// are freed by the delayed refs and stay pinned until the commit is on
// disk), else it fails with ENOSPC before anything changed. Reserve should
// come first in a handle: the commit it may start includes what the
// handle did before.
// ReserveForDelete may use the global reserve, so that freeing space always
// works on a full filesystem; commits use it for the extent, free space and
// root tree updates. Tree block allocation itself never refuses while any
// metadata space is left; when none is, the B-tree operation asking is half
// done and the transaction is aborted (the disk keeps the last commit), so
// every handle that changes trees should reserve first.

// itemCost is the metadata reserved per item. mirrors btrfs_calc_insert_metadata_size
func (f *Engine) itemCost(items int) uint64 {
	return uint64(items) * f.nodeSize * 2 * ondisk.MaxLevel
}

// globalReserve is the metadata kept for commits and deletions.
// mirrors btrfs_update_global_block_rsv (sized from the metadata space here)
func (f *Engine) globalReserve() uint64 {
	if f.mixed {
		return f.mixedGlobalReserve()
	}
	total := f.groups.Space(ondisk.BlockGroupMetadata).Total
	return min(max(total/16, 32*f.nodeSize), 512<<20)
}

// commitReserve is the part of the global reserve that only commits use.
func (f *Engine) commitReserve() uint64 { return f.globalReserve() / 2 }

// metaAvail is the metadata space neither used, pinned, nor reserved;
// unless held, less what HoldMeta holds for buffered data.
func (f *Engine) metaAvail(held bool) uint64 {
	s := f.groups.Space(ondisk.BlockGroupMetadata)
	used := f.metaRsv
	if !held {
		used += f.metaHeld.Load()
	}
	return s.Free - min(s.Free, used)
}

// Reserve reserves metadata space for changing items items; it fails with
// an error satisfying errors.Is(err, syscall.ENOSPC) when the filesystem is
// too full (nothing is changed then). The reservation lasts until End.
// mirrors btrfs_start_transaction(root, num_items)
func (h *Handle) Reserve(items int) error { return h.reserve(items, false, 0) }

// ReserveKeeping is Reserve that, on a filesystem with mixed block groups,
// also leaves keep bytes of the shared space to data promised elsewhere
// (buffered data whose writeback is to come); with separate data groups
// keep does not matter. mirrors the shared space_info's bytes_may_use,
// which counts data reservations too
func (h *Handle) ReserveKeeping(items int, keep uint64) error { return h.reserve(items, false, keep) }

// ReserveForDelete is Reserve for operations that free space: it may dip
// into the global reserve. mirrors btrfs_start_transaction_fallback_global_rsv
func (h *Handle) ReserveForDelete(items int) error { return h.reserve(items, true, 0) }

// Metadata for buffered data.
//
// Writing buffered data back needs metadata (file extent, extent and
// checksum items), and the data was accepted long before: the kernel
// reserves that metadata at write(2) with the data
// (btrfs_delalloc_reserve_metadata), so that writeback cannot fail for
// the lack of it when something else filled the metadata space
// meanwhile. HoldMeta is that reservation, kept by the caller's page cache
// outside any handle: no other handle may use it (metaAvail), while a
// handle that writes buffered data back (UseHeldMeta) may, for its own
// reservation and the metadata its data extents need. The holder gives
// back (ReleaseMeta) what it no longer needs as its buffered data shrinks.

// HoldMeta holds metadata for changing items items at the writeback of
// buffered data, beyond this handle (until ReleaseMeta), and returns the
// bytes held; it fails as Reserve does, holding nothing. When mayGrow is
// false it neither adds a chunk nor commits, and holds no more than half
// the free metadata (so that a large hold cannot make other operations
// add chunks): the caller first writes back what it buffered, which
// gives back what it holds.
// mirrors btrfs_delalloc_reserve_metadata
func (h *Handle) HoldMeta(items int, mayGrow bool) (uint64, error) {
	if err := h.check(); err != nil {
		return 0, err
	}
	f := h.f
	need := f.itemCost(items)
	if !mayGrow {
		// at most half of what is free: the holder's estimate is the
		// worst case (BTRFS_MAX_LEVEL blocks per item), and other
		// operations short of room would add metadata chunks for it
		if held := f.metaHeld.Load() + need; f.metaAvail(false) >= need+f.globalReserve()+held {
			f.metaHeld.Add(need)
			return need, nil
		}
		return 0, fmt.Errorf("txn: hold metadata for %d items (%d bytes, %d available): %w",
			items, need, f.metaAvail(false), syscall.ENOSPC)
	}
	r := &Handle{f: f}
	if err := r.reserve(items, false, 0); err != nil {
		return 0, err
	}
	// moved from the handle's reservation to the held one
	f.metaRsv -= min(f.metaRsv, r.rsv)
	f.metaHeld.Add(r.rsv)
	return r.rsv, nil
}

// ReleaseMeta gives back n bytes held by HoldMeta. It needs no handle.
func (f *Engine) ReleaseMeta(n uint64) {
	for {
		h := f.metaHeld.Load()
		if f.metaHeld.CompareAndSwap(h, h-min(h, n)) {
			return
		}
	}
}

// MetaRoom is about the metadata a new reservation could take: the free
// space of the metadata groups less what HoldMeta holds and the global
// reserve, plus the device's unallocated space (a new metadata chunk).
// It takes no handle: handles running meanwhile are not counted.
func (f *Engine) MetaRoom() uint64 {
	s := f.groups.Space(ondisk.BlockGroupMetadata)
	used := f.metaHeld.Load() + f.globalReserve()
	return s.Free - min(s.Free, used) + f.groups.Device().Unallocated()
}

// MetaHeld is the metadata HoldMeta holds.
func (f *Engine) MetaHeld() uint64 { return f.metaHeld.Load() }

// ItemCost is the metadata Reserve holds for items items.
func (f *Engine) ItemCost(items int) uint64 { return f.itemCost(items) }

// UseHeldMeta lets the handle use the metadata held for buffered data: it
// writes such data back.
func (h *Handle) UseHeldMeta() { h.held = true }

func (h *Handle) reserve(items int, global bool, keep uint64) error {
	if err := h.check(); err != nil {
		return err
	}
	f := h.f
	need := f.itemCost(items)
	for attempt := 0; ; attempt++ {
		floor := f.globalReserve()
		if global {
			// Deletions may use the global reserve, but not the part the
			// commit itself needs for the extent, free space and root
			// tree updates: with that gone a commit cannot finish.
			floor = f.commitReserve()
		} else if f.mixed {
			floor += keep
		}
		floor += f.refsReserve()
		if f.metaAvail(h.held) >= need+floor {
			f.metaRsv += need
			h.rsv += need
			return nil
		}
		switch attempt {
		case 0:
			if _, err := f.allocChunk(ondisk.BlockGroupMetadata); err == nil {
				continue
			}
			fallthrough
		case 1:
			// Space freed in this transaction (pinned, or queued to be
			// freed when the delayed refs run) comes back with a commit.
			if f.needsCommit() {
				if err := f.commitLocked(); err != nil {
					return err
				}
				continue
			}
		}
		return fmt.Errorf("txn: reserve metadata for %d items (%d bytes, %d available): %w",
			items, need, f.metaAvail(h.held), syscall.ENOSPC)
	}
}

// allocChunk adds a chunk of kind with the profile existing groups of kind
// have, first making sure the chunk tree has system space to record it.
// mirrors btrfs_chunk_alloc + check_system_chunk
func (f *Engine) allocChunk(kind uint64) (*blockgroup.Group, error) {
	if kind != ondisk.BlockGroupSystem {
		sys := f.groups.Space(ondisk.BlockGroupSystem)
		if sys.Free < 8*uint64(f.super.NodeSize) {
			if _, err := f.groups.AllocChunk(ondisk.BlockGroupSystem, f.groups.Profile(ondisk.BlockGroupSystem),
				f.Info.Chunks); err != nil && !errors.Is(err, syscall.ENOSPC) {
				return nil, err
			}
		}
	}
	kind = f.chunkKind(kind)
	return f.groups.AllocChunk(kind, f.groups.Profile(kind), f.Info.Chunks)
}

// metaForData makes sure a data allocation of size bytes leaves the
// metadata it needs (its file extent, extent and checksum items) outside
// the global reserve; held: the handle writes back buffered data and may
// use the metadata held for it (HoldMeta).
func (f *Engine) metaForData(size uint64, held bool) error {
	if f.mixed {
		return f.mixedDataRoom(size)
	}
	need := f.itemCost(2) + f.globalReserve()
	if f.metaAvail(held) >= need {
		return nil
	}
	if _, err := f.allocChunk(ondisk.BlockGroupMetadata); err == nil && f.metaAvail(held) >= need {
		return nil
	}
	return fmt.Errorf("txn: metadata space for a data extent: %w", syscall.ENOSPC)
}

// AllocChunk adds a chunk of kind (ondisk.BlockGroupData, Metadata or
// System) now, with the profile the existing ones have; its items are
// written at commit. mirrors btrfs_force_chunk_alloc
func (h *Handle) AllocChunk(kind uint64) error {
	if err := h.check(); err != nil {
		return err
	}
	if kind != ondisk.BlockGroupData && kind != ondisk.BlockGroupMetadata && kind != ondisk.BlockGroupSystem {
		return fmt.Errorf("txn: allocate chunk of type %#x: %w", kind, syscall.EINVAL)
	}
	if _, err := h.f.allocChunk(kind); err != nil {
		return fmt.Errorf("txn: %w", err)
	}
	return nil
}
