package scrub

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// A repair writes where the image's own chunk tree says a copy lives, and
// the image is untrusted: a crafted chunk can put a stripe past the end of
// the device, over a superblock or over another chunk's stripe, and a
// crafted extent item can name a block that crosses its stripe element
// (reads piece such a block together from two places; a write of it is
// one contiguous run). repairTarget refuses those before anything is
// written. The kernel refuses such a filesystem at mount
// (btrfs_verify_dev_extents, btrfs_check_chunk_valid).

// stripeDevLength is the device length of each stripe of a chunk.
// mirrors calc_stripe_length
func stripeDevLength(c *ondisk.Chunk) uint64 {
	n := uint64(len(c.Stripes))
	switch c.Type & ondisk.BlockGroupProfileMask {
	case ondisk.BlockGroupRaid0:
		return c.Length / max(n, 1)
	case ondisk.BlockGroupRaid10:
		return c.Length * uint64(max(c.SubStripes, 1)) / max(n, 1)
	case ondisk.BlockGroupRaid5:
		return c.Length / max(n-1, 1)
	case ondisk.BlockGroupRaid6:
		return c.Length / max(n-2, 1)
	}
	return c.Length
}

// repairTarget checks that n bytes at logical may be written over copy c:
// the range lies in one stripe element, inside the device, on no
// superblock copy, inside a stripe of its own chunk and in no other
// chunk's stripe.
func (s *scrubber) repairTarget(logical ondisk.LogicalAddr, c volume.Copy, n uint64) error {
	if _, avail, err := s.fi.Chunks.Map(logical, n); err != nil {
		return err
	} else if avail < n {
		return fmt.Errorf("not repaired: the %d bytes at logical %d cross a stripe or chunk boundary (only %d are contiguous on the device)", n, logical, avail)
	}
	start := uint64(c.Physical)
	end := start + n
	dev, err := s.fi.Devices.Device(c.DevID)
	if err != nil {
		return err
	}
	if end < start || dev.Size() < 0 || end > uint64(dev.Size()) {
		return fmt.Errorf("not repaired: physical [%d, %d) on devid %d is beyond the device's %d bytes (bad chunk stripe)", start, end, c.DevID, dev.Size())
	}
	for _, sb := range ondisk.SuperMirrorOffsets {
		if start < uint64(sb)+ondisk.SuperInfoSize && uint64(sb) < end {
			return fmt.Errorf("not repaired: physical [%d, %d) on devid %d overlaps the superblock copy at %d (bad chunk stripe)", start, end, c.DevID, sb)
		}
	}
	own, _ := s.fi.Chunks.Lookup(logical)
	inside, overlaps := 0, 0
	for _, m := range s.fi.Chunks.All() {
		l := stripeDevLength(&m.Chunk)
		for _, st := range m.Chunk.Stripes {
			lo := uint64(st.Offset)
			hi := lo + l
			if st.DevID != c.DevID || start >= hi || lo >= end {
				continue
			}
			overlaps++
			if m.Logical == own.Logical && hi >= lo && lo <= start && end <= hi {
				inside++
			}
		}
	}
	if inside != 1 || overlaps != 1 {
		return fmt.Errorf("not repaired: physical [%d, %d) on devid %d is not inside one stripe of its chunk (at logical %d) alone (%d stripes overlap it): bad chunk stripes", start, end, c.DevID, own.Logical, overlaps)
	}
	return nil
}
