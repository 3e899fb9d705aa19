package txn

import (
	"fmt"
	"math"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TrimRange is struct fstrim_range: the logical range whose free space is
// discarded, the smallest free extent worth it, and on return the bytes
// discarded.
type TrimRange struct {
	Start, Len, MinLen uint64
}

// Trim discards free space (FITRIM): the free ranges of the block groups
// that overlap r's logical range, of at least r.MinLen bytes, on every
// stripe, and all unallocated device space (kernel btrfs trims that
// whatever the range), superblock copies excepted. Free means not
// referenced by the running transaction nor by the last committed one:
// extents freed since the last commit are pinned, not free, so a crash
// after the discard still finds every block the committed trees name.
// It holds the engine, so nothing is allocated meanwhile. Only a single
// device that can discard (an image file) is trimmed; else EOPNOTSUPP.
// It returns the bytes discarded. mirrors btrfs_ioctl_fitrim, btrfs_trim_fs
func (f *Engine) Trim(r TrimRange) (uint64, error) {
	d, ok := f.Info.Dev.(blockdev.Discarder)
	if !ok || !d.CanDiscard() || len(f.Info.Devices.Members()) != 1 {
		return 0, fmt.Errorf("trim: %w", syscall.EOPNOTSUPP)
	}
	if r.Len < uint64(f.super.SectorSize) {
		return 0, fmt.Errorf("trim: length %d below the sector size: %w", r.Len, syscall.EINVAL)
	}
	if r.Start == math.MaxUint64 {
		return 0, fmt.Errorf("trim: start %d: %w", r.Start, syscall.EINVAL)
	}
	end := uint64(math.MaxUint64)
	if r.Len != math.MaxUint64 {
		if r.Start > math.MaxUint64-r.Len {
			return 0, fmt.Errorf("trim: range %d+%d overflows: %w", r.Start, r.Len, syscall.EINVAL)
		}
		end = r.Start + r.Len
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.usable(); err != nil {
		return 0, err
	}
	var trimmed uint64
	discard := func(start, n uint64) error {
		for _, p := range skipSupers(start, n) {
			if err := d.Discard(int64(p.Start), int64(p.Len())); err != nil {
				return err
			}
			trimmed += p.Len()
		}
		return nil
	}
	for _, g := range f.groups.Groups() {
		if uint64(g.End()) <= r.Start || uint64(g.Start) >= end || g.Pending() || !linearProfile(g.Chunk.Type) {
			continue
		}
		for _, fr := range g.FreeRanges() {
			s, e := max(fr.Start, r.Start), min(fr.End, end)
			if e <= s || e-s < r.MinLen {
				continue
			}
			for _, st := range g.Chunk.Stripes {
				if err := discard(uint64(st.Offset)+s-uint64(g.Start), e-s); err != nil {
					return trimmed, err
				}
			}
		}
	}
	for _, h := range f.groups.Device().Holes() {
		if err := discard(h.Start, h.Len()); err != nil {
			return trimmed, err
		}
	}
	return trimmed, nil
}

// linearProfile: every stripe is a whole copy of the chunk (single, DUP,
// RAID1*), so logical offset o is at offset o of each stripe.
func linearProfile(typ uint64) bool {
	p := typ & ondisk.BlockGroupProfileMask
	return p == 0 || p&(ondisk.BlockGroupDup|ondisk.BlockGroupRaid1|ondisk.BlockGroupRaid1C3|ondisk.BlockGroupRaid1C4) != 0
}

// skipSupers splits the physical range [start, start+n) around the
// superblock copies.
func skipSupers(start, n uint64) []blockgroup.Range {
	out := []blockgroup.Range{{Start: start, End: start + n}}
	for _, sb := range ondisk.SuperMirrorOffsets {
		s, e := uint64(sb), uint64(sb)+ondisk.SuperInfoSize
		var next []blockgroup.Range
		for _, r := range out {
			if e <= r.Start || s >= r.End {
				next = append(next, r)
				continue
			}
			if r.Start < s {
				next = append(next, blockgroup.Range{Start: r.Start, End: s})
			}
			if e < r.End {
				next = append(next, blockgroup.Range{Start: e, End: r.End})
			}
		}
		out = next
	}
	return out
}
