package txn

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Mixed block groups (INCOMPAT_MIXED_GROUPS, mkfs.btrfs --mixed): every
// chunk but the SYSTEM ones is DATA|METADATA, and tree blocks and file data
// come from the same groups. The kernel then has one space_info for both,
// whose bytes_may_use counts data and metadata reservations and the global
// reserve together. Here:
//
//   - blockgroup.Manager already lists a mixed group under both kinds, so
//     Alloc(DATA) and Alloc(METADATA) find the same free space, and
//     Space(DATA) and Space(METADATA) report the same pool;
//   - new chunks are DATA|METADATA whichever kind asked (chunkKind);
//   - data may not take what metadata keeps: the global reserve, the
//     running handle's unused metadata reservation, the two items a data
//     extent adds and the room the queued delayed refs need at commit
//     (dataFree, metaForData, refsReserve), so a commit always finds the
//     metadata it needs and ENOSPC comes from the write;
//   - a metadata reservation may be asked to leave data promised to
//     buffered writers (ReserveKeeping), as the shared bytes_may_use does;
//   - the global reserve is sized as the kernel's minimum rather than a
//     share of the whole pool (mixedGlobalReserve).

// chunkKind is the type of a new chunk asked for kind: DATA|METADATA for
// either on a mixed filesystem. mirrors btrfs_chunk_alloc's use of
// fs_info->data_sinfo / metadata space_info flags with MIXED_GROUPS
func (f *Engine) chunkKind(kind uint64) uint64 {
	if f.mixed && kind&(ondisk.BlockGroupData|ondisk.BlockGroupMetadata) != 0 {
		return ondisk.BlockGroupData | ondisk.BlockGroupMetadata
	}
	return kind
}

// unlinkItems is BTRFS_UNLINK_METADATA_UNITS.
const unlinkItems = 6

// mixedGlobalReserve is the global reserve of a mixed filesystem: the
// kernel's minimum (an unlink and its delayed refs besides one item per
// global tree, btrfs_update_global_block_rsv on a small filesystem) or a
// sixty-fourth of the pool, whichever is more, at most 512 MiB. The share
// of the pool that the separate metadata groups give up otherwise (a
// sixteenth) would here be a sixteenth of the data.
func (f *Engine) mixedGlobalReserve() uint64 {
	trees := 4 // root, extent, csum, free space or block group
	minimum := f.itemCost(1+trees+unlinkItems) + 2*f.itemCost(unlinkItems)
	total := f.groups.Space(ondisk.BlockGroupMetadata).Total
	return min(max(total/64, minimum), 512<<20)
}

// refsReserve is the metadata the commit will need to run the delayed
// refs queued so far, beyond the commit reserve, on a mixed filesystem:
// a block per ref head (the extent tree leaf it changes), and one more
// with a free space tree. With 4 KiB nodes (nodesize is the sector size
// on mixed filesystems) a commit of a few hundred scattered frees COWs
// more extent and free space tree leaves than the commit reserve holds;
// counting them makes a reservation commit first instead. Separate
// metadata groups keep their own balance (0). mirrors the delayed refs
// reserve (btrfs_calc_delayed_ref_bytes), which the kernel fills per
// handle
func (f *Engine) refsReserve() uint64 {
	if !f.mixed {
		return 0
	}
	per := f.nodeSize
	if f.fst {
		per *= 2
	}
	return uint64(f.refs.Len()) * per
}

// dataFree is what data extents may take of the existing groups now:
// their free space, less, on a mixed filesystem, what metadata keeps (the
// global reserve, the unused metadata reservations, the items a data
// extent adds and the room for the queued delayed refs; the metadata of
// buffered data's writeback is kept with its data: fsops.ReserveData).
// Caller holds f.mu.
func (f *Engine) dataFree() uint64 { return f.dataFreeOf(f.groups.Space(ondisk.BlockGroupData)) }

// dataFreeOf is dataFree given the data groups' totals.
func (f *Engine) dataFreeOf(s blockgroup.Space) uint64 {
	if !f.mixed {
		return s.Free
	}
	keep := f.globalReserve() + f.metaRsv + f.itemCost(2) + f.refsReserve()
	return s.Free - min(s.Free, keep)
}

// mixedDataRoom makes sure size bytes of data leave what metadata keeps,
// adding a chunk when they do not. mirrors btrfs_reserve_data_bytes on the
// shared space_info (bytes_may_use includes the global reserve)
func (f *Engine) mixedDataRoom(size uint64) error {
	if f.dataFree() >= size {
		return nil
	}
	if _, err := f.allocChunk(ondisk.BlockGroupData); err == nil && f.dataFree() >= size {
		return nil
	}
	return fmt.Errorf("txn: %d bytes of data beside the metadata reserve (%d bytes free for data): %w",
		size, f.dataFree(), syscall.ENOSPC)
}

// DataSpace is what data may use in the existing block groups.
type DataSpace struct {
	// Free is what new data extents may take now without a new chunk
	// (on a mixed filesystem: less what metadata keeps).
	Free uint64
	// Pinned is what a commit of the running transaction would add to
	// Free: the space it freed, and on a mixed filesystem the room kept
	// for running its delayed refs.
	Pinned uint64
}

// DataSpace reports the data space as this handle sees it (its own metadata
// reservation is kept from data on a mixed filesystem).
func (h *Handle) DataSpace() DataSpace {
	f := h.f
	s := f.groups.Space(ondisk.BlockGroupData)
	return DataSpace{Free: f.dataFreeOf(s), Pinned: s.Pinned + f.refsReserve()}
}

// DataFree is DataSpace's Free without waiting for a handle (statfs): the
// free space of the data groups, less the global reserve on a mixed
// filesystem (the running handle's reservation is not known here).
func (f *Engine) DataFree() uint64 {
	s := f.groups.Space(ondisk.BlockGroupData)
	if !f.mixed {
		return s.Free
	}
	return s.Free - min(s.Free, f.globalReserve())
}

// Mixed reports whether data and metadata share block groups.
func (f *Engine) Mixed() bool { return f.mixed }

// ItemsBytes is the metadata Reserve(items) holds.
// mirrors btrfs_calc_insert_metadata_size
func (f *Engine) ItemsBytes(items int) uint64 { return f.itemCost(items) }
