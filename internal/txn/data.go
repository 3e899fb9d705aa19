package txn

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// MaxDataExtent is the largest data extent AllocData hands out (BTRFS_MAX_EXTENT_SIZE).
const MaxDataExtent = 128 << 20

// AllocData reserves size bytes (rounded up to the sector size) of data
// space in one extent. The extent gets its extent item when the first
// reference is added (AddDataRef), which must happen before the handle
// ends: one without a reference at commit is freed. The error satisfies errors.Is(err, syscall.ENOSPC) when no data
// group has a free range that large and no chunk can be added.
// mirrors btrfs_reserve_extent for data
func (h *Handle) AllocData(size uint64) (ondisk.LogicalAddr, error) {
	if err := h.check(); err != nil {
		return 0, err
	}
	f := h.f
	ss := uint64(f.super.SectorSize)
	size = (size + ss - 1) / ss * ss
	if size == 0 || size > MaxDataExtent {
		return 0, fmt.Errorf("txn: allocate data extent of %d bytes: %w", size, syscall.EINVAL)
	}
	if err := f.metaForData(size, h.held); err != nil {
		return 0, err
	}
	addr, err := f.groups.Alloc(ondisk.BlockGroupData, size, ss, false)
	if errors.Is(err, syscall.ENOSPC) {
		if _, cerr := f.allocChunk(ondisk.BlockGroupData); cerr == nil {
			addr, err = f.groups.Alloc(ondisk.BlockGroupData, size, ss, false)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("txn: %w", err)
	}
	f.newData[addr] = size
	return addr, nil
}

// AddDataRef adds a reference to the data extent at bytenr from the file
// extent item of inode ino in tree root whose key offset minus its extent
// offset is offset (the kernel's data ref offset).
// mirrors btrfs_inc_extent_ref for data (and btrfs_alloc_reserved_file_extent for the first)
func (h *Handle) AddDataRef(bytenr ondisk.LogicalAddr, numBytes uint64, root, ino ondisk.ObjectID, offset uint64) error {
	return h.modDataRef(bytenr, numBytes, root, ino, offset, 1)
}

// DropDataRef drops such a reference; when the last goes, the extent is
// freed (at commit), its checksums are deleted and its space returns to
// the free space once the transaction has committed. mirrors btrfs_free_extent for data
func (h *Handle) DropDataRef(bytenr ondisk.LogicalAddr, numBytes uint64, root, ino ondisk.ObjectID, offset uint64) error {
	return h.modDataRef(bytenr, numBytes, root, ino, offset, -1)
}

func (h *Handle) modDataRef(bytenr ondisk.LogicalAddr, numBytes uint64, root, ino ondisk.ObjectID, offset uint64, count int) error {
	if err := h.check(); err != nil {
		return err
	}
	f := h.f
	if ino < ondisk.FirstFreeObjectID {
		return fmt.Errorf("txn: data ref of inode %d: %w", ino, syscall.EINVAL)
	}
	ref := delayedref.DataRef(root, ino, offset, 0)
	if n, ok := f.newData[bytenr]; ok && count > 0 {
		if n != numBytes {
			return fmt.Errorf("txn: data ref to %d+%d: extent was allocated with %d bytes", uint64(bytenr), numBytes, n)
		}
		delete(f.newData, bytenr)
		return f.refs.Allocated(bytenr, numBytes, 0, ref, count)
	}
	if g := f.groups.Lookup(bytenr); g == nil || !g.IsType(ondisk.BlockGroupData) {
		return fmt.Errorf("txn: data ref to %d: not in a data block group: %w", uint64(bytenr), syscall.EINVAL)
	}
	return f.refs.Add(bytenr, numBytes, 0, ref, count)
}

// WriteData writes data at bytenr (inside an extent from AllocData) to
// every copy. It reaches the device at once; nothing references it before
// the commit.
func (h *Handle) WriteData(bytenr ondisk.LogicalAddr, data []byte) error {
	if err := h.check(); err != nil {
		return err
	}
	if err := h.f.writeLogical(bytenr, data); err != nil {
		return fmt.Errorf("txn: write data: %w", err)
	}
	return nil
}

// AddCsums stores the checksums of data (whole sectors starting at bytenr)
// in the checksum tree. mirrors btrfs_csum_file_blocks
func (h *Handle) AddCsums(bytenr ondisk.LogicalAddr, data []byte) error {
	if err := h.check(); err != nil {
		return err
	}
	if err := h.f.ext.AddCsums(h.f.env(), bytenr, data); err != nil {
		return fmt.Errorf("txn: %w", err)
	}
	return nil
}

// DelCsums deletes the checksums of [bytenr, bytenr+n) (for callers that
// rewrite data in place, e.g. NOCOW files turning checksummed).
func (h *Handle) DelCsums(bytenr ondisk.LogicalAddr, n uint64) error {
	if err := h.check(); err != nil {
		return err
	}
	return h.f.ext.DelCsums(h.f.env(), bytenr, n)
}

// ExtendData grows the data extent at bytenr, allocated in this
// transaction with numBytes and referenced once since (AddDataRef), by
// the add bytes that follow it on disk, when they are free and the result
// stays within MaxDataExtent. It reports whether it did; the extent item
// the commit inserts then has the new size. The caller writes the new
// bytes (WriteData) and makes its file extent item cover them. A stream
// written back in pieces so becomes one extent, as the kernel's delalloc
// range would be. mirrors nothing in the kernel, whose writeback sees the
// whole delalloc range at once (cow_file_range)
func (h *Handle) ExtendData(bytenr ondisk.LogicalAddr, numBytes, add uint64) (bool, error) {
	if err := h.check(); err != nil {
		return false, err
	}
	f := h.f
	ss := uint64(f.super.SectorSize)
	if add == 0 || add%ss != 0 || numBytes%ss != 0 || numBytes+add > MaxDataExtent {
		return false, nil
	}
	if _, ok := f.newData[bytenr]; ok {
		return false, nil // no reference yet
	}
	if err := f.metaForData(add, h.held); err != nil {
		return false, err
	}
	next := bytenr + ondisk.LogicalAddr(numBytes)
	g := f.groups.Lookup(bytenr)
	if g == nil || !g.IsType(ondisk.BlockGroupData) || !g.Contains(next) || !g.Contains(next+ondisk.LogicalAddr(add-1)) {
		return false, nil
	}
	if err := f.groups.AllocAt(next, add); err != nil {
		return false, nil // not free: the caller allocates a new extent
	}
	if !f.refs.Grow(bytenr, numBytes, numBytes+add) {
		if err := f.groups.Release(next, add); err != nil {
			return false, f.abort(fmt.Errorf("txn: give back %d+%d: %w", uint64(next), add, err))
		}
		return false, nil
	}
	return true, nil
}
