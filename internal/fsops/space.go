package fsops

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// Space reservation, the fsops side of the kernel's "HOW DOES SPACE
// RESERVATION WORK" (space-info.c, delalloc-space.c):
//
// Metadata. Every operation that changes trees first reserves metadata for
// the items it will change, as btrfs_start_transaction(root, num_items)
// does: txn's Handle.Reserve(n) holds n * nodesize * BTRFS_MAX_LEVEL * 2
// bytes (btrfs_calc_insert_metadata_size) and refuses with ENOSPC while the
// filesystem is too full, before anything changed. Operations that free
// space (unlink, rmdir, removexattr, truncating down, punching holes,
// deleting subvolumes) use ReserveForDelete, which may dip into the global
// reserve, and settle for less than their worst case when even that cannot
// hold it, so that a full filesystem can always be emptied
// (btrfs_start_transaction_fallback_global_rsv). The item counts of each
// operation are below; they follow the kernel's where an operation has a
// kernel counterpart.
//
// Data. An operation that allocates data extents works out how much it
// needs (copy-on-write bytes; nothing for NODATACOW and preallocated
// extents it overwrites in place), checks that against the free space of the
// data block groups less what ReserveData holders keep, adding data chunks
// as the kernel's btrfs_alloc_data_chunk_ondemand does, then allocates every
// extent before it changes a tree. So a write that cannot get its space
// fails with ENOSPC and leaves the file as it was. Space freed in the running
// transaction is pinned until it commits: when that would make the
// difference, the operation is retried once after a commit.
//
// Mixed block groups (data and metadata in the same DATA|METADATA groups)
// make the two one pool. txn then counts as free for data only what the
// global reserve, the running handle's metadata reservation and the
// pending delayed refs leave (txn.Handle.DataSpace); ReserveData also
// keeps room for its writeback's metadata (dataSpace.wbMeta); and metadata
// reservations leave the ReserveData holders their space
// (txn.Handle.ReserveKeeping), as the kernel's one space_info counts data
// and metadata reservations together.
//
// Buffered writers (the library's write buffer) hold data space for dirty data
// with ReserveData until writeback, which passes the bytes it consumes to
// WriteAtReserved; other operations never use space somebody reserved.

// Metadata items reserved per operation. mirrors the num_items of the
// kernel's btrfs_start_transaction callers
const (
	// inode item (+ its ref), dir item, dir index, parent inode: btrfs_new_inode_prepare.
	// We insert the inode ref on its own, one more.
	itemsCreate = 5
	// + the inline extent holding the target: btrfs_symlink
	itemsSymlink = itemsCreate + 1
	// inode item, inode ref, dir item, dir index, parent inode: btrfs_link
	itemsLink = 5
	// orphan item, dir item, dir index, inode ref, inode:
	// __unlink_start_trans, also for rmdir (we have no orphan item but
	// delete the inode's items in the same handle: dropLinkItems more)
	itemsUnlink = 5
	// two unlinks and one link: btrfs_rename
	itemsRename = 11
	// one inode update: btrfs_dirty_inode
	itemsInode = 1
	// xattr item and inode: btrfs_setxattr_trans
	itemsXattr = 2
	// parent inode, dir item and index, root item, root ref and backref,
	// root of the new tree, uuid item: create_snapshot / create_subvol
	itemsSnapshot = 8
	// + the new tree's root directory inode item and its ref
	itemsSubvol = itemsSnapshot + 2
	// dir inode, dir item and index, root ref and backref: btrfs_delete_subvolume;
	// + the uuid item and the root item we drop in the same handle
	itemsDelSubvol = 7
	// a hole extent (filesystems without NO_HOLES): btrfs_cont_expand
	itemsHoles = 1
	// the inline extent becoming a regular one: its extent item and checksums
	itemsUninline = 2
	// rewriting one sector: file extent, checksum item, the extent it replaces
	itemsZeroSector = 3
	// extent items changed per metadata item reserved when many are
	// deleted, trimmed or inserted next to each other (a reserved item
	// covers 2 * BTRFS_MAX_LEVEL new blocks; a leaf holds well over 64
	// file extent items)
	extentsPerItem = 64
	// one more item per this many new data bytes, for data space so
	// fragmented, or data so compressible, that extents come out small
	// (an item's 16 blocks hold thousands of file extent items)
	fragmentBytes = 16 << 20
)

// manyItems is the reservation for changing n adjacent extent items.
func manyItems(n int) int { return (n + extentsPerItem - 1) / extentsPerItem }

// csumItems is how many checksum leaves the data of n bytes needs.
// mirrors btrfs_csum_bytes_to_leaves
func (f *FS) csumItems(n uint64) int {
	perLeaf := uint64(f.maxItemSize() / f.info.Csum.Size())
	sums := n / f.sectorSize
	return int((sums + perLeaf - 1) / perLeaf)
}

// cowItems is the reservation for storing n bytes in new extents: one
// extent item per BTRFS_MAX_EXTENT_SIZE (count_max_extents), an allowance
// for smaller extents, and the checksums. mirrors calc_inode_reservations
func (f *FS) cowItems(n uint64, csums bool) int {
	if n == 0 {
		return 0
	}
	items := int((n+maxExtent-1)/maxExtent + n/fragmentBytes)
	if csums {
		items += f.csumItems(n)
	}
	return items
}

// writebackMeta is the metadata the writeback of n buffered bytes
// reserves (write's reserveStore: the new extents and their checksums,
// the inode and a hole). mirrors calc_inode_reservations
func (f *FS) writebackMeta(n uint64) uint64 {
	return f.tx.ItemsBytes(f.cowItems(n, true) + itemsInode + itemsHoles)
}

// reserve reserves metadata for changing items items. It must come before
// the operation changes anything: it may commit the running transaction.
// mirrors btrfs_start_transaction(root, num_items)
func (o *op) reserve(items int) error {
	err := o.h.ReserveKeeping(items, o.f.space.keptFor(o.ownRsv))
	o.transid = uint64(o.h.Transid()) // a reservation may commit first
	if err != nil {
		return fmt.Errorf("reserve metadata: %w", err)
	}
	return nil
}

// reserveForDelete is reserve for operations that free space: it may use
// the global reserve, and when even that cannot hold the worst case it
// settles for less, down to one item. Deleting must work on a full
// filesystem: the kernel sizes its global reserve to hold an unlink, txn's
// (a sixteenth of the metadata, at least 32 blocks) may hold less than the
// worst case of one, while what a deletion really changes is a few blocks
// per leaf of items it removes. mirrors btrfs_start_transaction_fallback_global_rsv
func (o *op) reserveForDelete(items int) error {
	var err error
	for n := items; n > 0; n /= 2 {
		if err = o.h.ReserveForDelete(n); err == nil || !errors.Is(err, syscall.ENOSPC) {
			break
		}
	}
	o.transid = uint64(o.h.Transid()) // a reservation may commit first
	if err != nil {
		return fmt.Errorf("reserve metadata: %w", err)
	}
	return nil
}

// Stats counts what the space paths did.
type Stats struct {
	// NocowChecks is how many times CanNocow ran (it looks up the extent
	// tree, which the reserve-first buffered path avoids while there is
	// free space).
	NocowChecks uint64
	// DataReserved is the data space ReserveData holders keep now.
	DataReserved uint64
	// DataFree is the free space of the data block groups when last seen.
	DataFree uint64
	// ReserveDataFails counts ReserveData calls refused with ENOSPC.
	ReserveDataFails uint64
	// SpaceCommits counts the commits made to get back pinned data space.
	SpaceCommits uint64
}

// dataSpace is the data space accounting of fsops: the free space of the
// data block groups as last seen inside a handle, and what is promised
// against it. It has its own lock so that ReserveData does not wait for a
// running operation. mirrors the data space_info's bytes_may_use
type dataSpace struct {
	mu     sync.Mutex
	free   uint64 // data groups' free space at the last refresh
	pinned uint64 // data freed in the running transaction (free after commit)
	rsv    uint64 // held by ReserveData
	// claim is what the running operation may still allocate beyond its
	// own reservation; it is part of free until the refresh at its end.
	claim uint64
	// full is set when a reservation failed after adding chunks and
	// committing; it holds until the space changes or a commit happens.
	full      bool
	fullSeen  [2]uint64         // free, pinned when full was set
	fullTrans ondisk.Generation // transaction running when full was set
	stats     Stats
	// wbMeta is, with mixed block groups (data and metadata share the
	// space), the metadata the writeback of n reserved bytes reserves:
	// ReserveData keeps it from data too, as the kernel's buffered write
	// reserves the delalloc metadata with the data. nil with separate
	// data groups. mirrors btrfs_delalloc_reserve_metadata
	wbMeta func(n uint64) uint64
}

// held is what reservations of rsv bytes keep of the free space: the
// bytes, and with mixed block groups room for their writeback's metadata:
// what it reserves, once (writebacks run one at a time, and the
// reservation ends with each), and as much again for the tree blocks the
// writebacks use and the old copies they pin until a commit.
func (d *dataSpace) held(rsv uint64) uint64 {
	if d.wbMeta == nil || rsv == 0 {
		return rsv
	}
	return rsv + 2*d.wbMeta(rsv)
}

// kept is what an operation that consumes own reserved bytes must leave
// to the other ReserveData holders: their bytes, and unless the
// operation is itself a writeback (whose metadata reservation is the room
// held for it, in use) the room for their writeback's metadata. Caller
// holds mu.
func (d *dataSpace) kept(own uint64) uint64 {
	others := d.rsv - min(d.rsv, own)
	if own > 0 {
		return others
	}
	return d.held(others)
}

// fits reports whether a new reservation of n bytes fits. Caller holds mu.
func (d *dataSpace) fits(n uint64) bool {
	return d.held(d.rsv+n)+d.claim <= d.free
}

// keptFor is what the metadata reservations of an operation that consumes
// own reserved bytes must leave to the other ReserveData holders: nothing
// with separate data groups (txn ignores it then), their bytes and their
// writeback's metadata with mixed ones.
func (d *dataSpace) keptFor(own uint64) uint64 {
	if d.wbMeta == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.kept(own)
}

// refreshSpace records the data groups' free space; the caller holds a
// handle (so nothing changes the groups meanwhile).
func (f *FS) refreshSpace(h *txn.Handle) { f.endSpace(h, false, 0) }

// endSpace is refreshSpace at the end of an operation (done): its claim
// ends and consumed bytes of reservation are released, in the same step
// as free space is read again, so that ReserveData never sees the claim
// gone but the space it covered still counted free.
func (f *FS) endSpace(h *txn.Handle, done bool, consumed uint64) {
	s := h.DataSpace()
	d := &f.space
	d.mu.Lock()
	defer d.mu.Unlock()
	if done {
		d.claim = 0
		d.rsv -= min(d.rsv, consumed)
	}
	d.free, d.pinned = s.Free, s.Pinned
	if d.full && (d.fullSeen != [2]uint64{s.Free, s.Pinned} || f.tx.Transid() != d.fullTrans) {
		d.full = false
	}
}

// errSpaceRetry asks run to commit and run the operation again: it found
// too little data space, but the commit returns space it pinned.
type errSpaceRetry struct{ err error }

func (e *errSpaceRetry) Error() string { return e.err.Error() }
func (e *errSpaceRetry) Unwrap() error { return e.err }

// ensureData makes sure the operation can allocate need bytes of data
// without touching space that ReserveData holders keep (less own, the
// reservation the operation consumes): it adds data chunks while the device
// has room, and when freed space is pinned asks for a commit and a retry.
// The bytes are claimed until the operation ends.
// mirrors btrfs_check_data_free_space / btrfs_alloc_data_chunk_ondemand
func (o *op) ensureData(need uint64) error {
	if need == 0 {
		return nil
	}
	f, d := o.f, &o.f.space
	for {
		f.refreshSpace(o.h)
		d.mu.Lock()
		others := d.rsv - min(d.rsv, o.ownRsv)
		keep := d.kept(o.ownRsv)
		ok := d.free >= keep && d.free-keep >= need
		if ok {
			d.claim = need - min(need, d.rsv-others)
		}
		pinned := d.pinned
		d.mu.Unlock()
		if ok {
			return nil
		}
		if err := o.h.AllocChunk(ondisk.BlockGroupData); err == nil {
			continue
		} else if !errors.Is(err, syscall.ENOSPC) {
			return err
		}
		err := fmt.Errorf("%d bytes of data space: %w", need, syscall.ENOSPC)
		if pinned > 0 && !o.retried {
			return &errSpaceRetry{err}
		}
		return err
	}
}

// ReserveData holds n bytes of data space for data buffered but not yet
// written (the page cache's dirty pages), so that its writeback finds space:
// reserve the whole sectors a buffered write touches, as writeback stores
// whole sectors. It fails with an error satisfying errors.Is(err,
// syscall.ENOSPC) when the data block groups, less what is already held,
// cannot take n more bytes even after adding data chunks and committing to
// get back pinned space; then CanNocow tells whether the write can go in
// place without space. The usual call costs one short lock; only when space
// is short does it wait for the running operation (and may commit).
// Writeback hands the bytes back through WriteAtReserved, dropped data
// through ReleaseData. mirrors btrfs_check_data_free_space
func (f *FS) ReserveData(n uint64) error {
	d := &f.space
	d.mu.Lock()
	if d.fits(n) {
		d.rsv += n
		d.mu.Unlock()
		return nil
	}
	full := d.full && f.tx.Transid() == d.fullTrans
	if full {
		d.stats.ReserveDataFails++
		d.mu.Unlock()
		return fmt.Errorf("reserve %d bytes of data: %w", n, syscall.ENOSPC)
	}
	d.mu.Unlock()
	return f.reserveDataSlow(n)
}

// reserveDataSlow flushes space the way the kernel's data reservation
// tickets do: add a data chunk, then commit to unpin freed space.
// mirrors btrfs_reserve_data_bytes (ALLOC_CHUNK_FORCE, COMMIT_TRANS)
func (f *FS) reserveDataSlow(n uint64) error {
	d := &f.space
	f.mu.Lock()
	defer f.mu.Unlock()
	for attempt := 0; ; attempt++ {
		h, err := f.tx.Begin()
		if err != nil {
			return err
		}
		f.refreshSpace(h)
		d.mu.Lock()
		ok := d.fits(n)
		if ok {
			d.rsv += n
		}
		pinned := d.pinned
		d.mu.Unlock()
		if ok {
			h.End()
			return nil
		}
		cerr := h.AllocChunk(ondisk.BlockGroupData)
		h.End()
		switch {
		case cerr == nil:
			continue
		case !errors.Is(cerr, syscall.ENOSPC):
			return cerr
		case pinned > 0 && attempt < 8:
			if err := f.commitLocked(); err != nil {
				return err
			}
			d.mu.Lock()
			d.stats.SpaceCommits++
			d.mu.Unlock()
			continue
		}
		d.mu.Lock()
		d.full, d.fullSeen, d.fullTrans = true, [2]uint64{d.free, d.pinned}, f.tx.Transid()
		d.stats.ReserveDataFails++
		free, rsv := d.free, d.rsv
		d.mu.Unlock()
		return fmt.Errorf("reserve %d bytes of data (%d free, %d reserved): %w", n, free, rsv, syscall.ENOSPC)
	}
}

// ReleaseData gives back n bytes held by ReserveData (data that was
// dropped, or written back by other means than WriteAtReserved).
func (f *FS) ReleaseData(n uint64) {
	d := &f.space
	d.mu.Lock()
	d.rsv -= min(d.rsv, n)
	d.mu.Unlock()
}

// Stats returns the space counters.
func (f *FS) Stats() Stats {
	d := &f.space
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stats
	s.NocowChecks = f.nocowChecks.Load()
	s.DataReserved = d.rsv
	s.DataFree = d.free
	return s
}

// HoldMeta holds the metadata that writing back buffered data will need
// (items items, see txn.Handle.HoldMeta) and returns the bytes held; the
// writeback passes through WriteAtHeld / WriteAtTimesHeld, which may use
// it, and the holder gives it back with ReleaseMeta. mayGrow false: only
// while the metadata groups have room, adding no chunk and making no
// commit. mirrors btrfs_delalloc_reserve_metadata
func (f *FS) HoldMeta(items int, mayGrow bool) (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, err := f.tx.Begin()
	if err != nil {
		return 0, err
	}
	defer h.End()
	n, err := h.HoldMeta(items, mayGrow)
	if err != nil {
		return 0, fmt.Errorf("hold metadata for buffered data: %w", err)
	}
	return n, nil
}

// ReleaseMeta gives back n bytes held by HoldMeta.
func (f *FS) ReleaseMeta(n uint64) { f.tx.ReleaseMeta(n) }

// MetaHeld is the metadata HoldMeta holds.
func (f *FS) MetaHeld() uint64 { return f.tx.MetaHeld() }

// MetaItemBytes is the metadata held for items items.
func (f *FS) MetaItemBytes(items int) uint64 { return f.tx.ItemCost(items) }

// MetaRoom is about the metadata a new operation could reserve
// (txn.Engine.MetaRoom).
func (f *FS) MetaRoom() uint64 { return f.tx.MetaRoom() }
