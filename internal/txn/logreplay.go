package txn

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// OpenOptions controls OpenWith.
type OpenOptions struct {
	// ReplayLog replays a log tree (super log_root != 0) while opening; it
	// must leave the log replayed into the subvolume trees, the log root
	// cleared in the pending superblock, and commit. Without it Open
	// refuses such images with ErrLogTree.
	ReplayLog func(fs *Engine) error
}

// The calls below are what a log replay (internal/treelog) needs beyond the
// ordinary write API: log tree blocks and the data extents only a log
// references are in no extent tree, so nothing may be allocated over them
// while the log is read. mirrors btrfs_pin_extent_for_log_replay and
// btrfs_exclude_logged_extents

// PinLogBlock keeps the tree block at addr (a log tree block) from being
// allocated until ReleaseLogBlock.
func (h *Handle) PinLogBlock(addr ondisk.LogicalAddr) error {
	if err := h.check(); err != nil {
		return err
	}
	if err := h.f.groups.AllocAt(addr, uint64(h.f.super.NodeSize)); err != nil {
		return fmt.Errorf("txn: log tree block %d is not free space (%w): %w", uint64(addr), err, diskio.ErrCorrupt)
	}
	return nil
}

// ReleaseLogBlock returns a pinned log tree block to the free space once the
// running transaction has committed (the old superblock still points to it
// until then).
func (h *Handle) ReleaseLogBlock(addr ondisk.LogicalAddr) error {
	if err := h.f.groups.ReleasePinned(addr, uint64(h.f.super.NodeSize)); err != nil {
		return fmt.Errorf("txn: release log tree block %d: %w", uint64(addr), err)
	}
	h.f.Info.R.Invalidate(addr)
	return nil
}

// ClaimLoggedData reserves the data extent [bytenr, bytenr+n) that a log
// references and that has no extent item yet: the next AddDataRef to it
// inserts its extent item (as after AllocData).
// mirrors btrfs_alloc_logged_file_extent
func (h *Handle) ClaimLoggedData(bytenr ondisk.LogicalAddr, n uint64) error {
	if err := h.check(); err != nil {
		return err
	}
	if err := h.f.groups.AllocAt(bytenr, n); err != nil {
		return fmt.Errorf("txn: claim logged data extent %d+%d: %w", uint64(bytenr), n, err)
	}
	h.f.newData[bytenr] = n
	return nil
}

// ExtentRefs is the reference count of the extent at bytenr, counting the
// changes queued in this transaction (0 when it has no extent item).
func (h *Handle) ExtentRefs(bytenr ondisk.LogicalAddr) (uint64, error) {
	if err := h.check(); err != nil {
		return 0, err
	}
	refs, _, err := h.f.ext.LookupInfo(h.f.env(), bytenr)
	return refs, err
}

// PutCsums stores ready-made checksums (one per sector from bytenr),
// replacing those stored for the range. mirrors btrfs_csum_file_blocks
func (h *Handle) PutCsums(bytenr ondisk.LogicalAddr, sums []byte) error {
	if err := h.check(); err != nil {
		return err
	}
	if err := h.f.ext.PutSums(h.f.env(), bytenr, sums); err != nil {
		return fmt.Errorf("txn: %w", err)
	}
	return nil
}

// CsumSize is the size of one data checksum.
func (h *Handle) CsumSize() int { return h.f.Info.Csum.Size() }
