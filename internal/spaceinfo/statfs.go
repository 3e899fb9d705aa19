package spaceinfo

import (
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// stripeLen is BTRFS_STRIPE_LEN.
const stripeLen = 64 << 10

// Statfs is what statfs(2) reports on a mount of the filesystem, in bytes:
// Blocks the size, Free the unused space less the global reserve, Avail
// what data can still take (free space in data block groups and what new
// data chunks could get from unallocated space). The metadata space is
// taken as not full (the kernel says 0 available only when it could not
// allocate a metadata chunk, which an image does not record).
// mirrors btrfs_statfs
func (in *Info) Statfs() (blocks, free, avail uint64) {
	var used, freeData uint64
	factor := uint64(1)
	dataProfile := uint64(0)
	for _, s := range in.Spaces {
		if s.Flags&GlobalRsvFlag != 0 {
			continue
		}
		n := NCopies(s.Flags)
		if s.Flags&ondisk.BlockGroupData != 0 {
			freeData += (s.Total - min(s.Used, s.Total)) * n
			factor = n // the last raid type with block groups, as the kernel's loop leaves it
			dataProfile = preferProfile(dataProfile, s.Flags&ondisk.BlockGroupProfileMask)
		}
		used += s.Used * n
	}
	ss := uint64(in.SectorSize)
	blocks = in.TotalBytes / factor / ss
	freeBlocks := blocks - min(blocks, used/factor/ss)
	freeBlocks -= min(freeBlocks, in.GlobalReserve/ss)
	availBytes := freeData/factor + in.availDataSpace(dataProfile)/factor
	return blocks * ss, freeBlocks * ss, availBytes / ss * ss
}

// preferProfile is the data profile new chunks get when several exist:
// the most redundant. mirrors btrfs_reduce_alloc_profile
func preferProfile(a, b uint64) uint64 {
	rank := func(p uint64) int {
		for i, q := range []uint64{ondisk.BlockGroupRaid1C4, ondisk.BlockGroupRaid1C3, ondisk.BlockGroupRaid6, ondisk.BlockGroupRaid5,
			ondisk.BlockGroupRaid10, ondisk.BlockGroupRaid1, ondisk.BlockGroupDup, ondisk.BlockGroupRaid0} {
			if p&q != 0 {
				return i
			}
		}
		return 99
	}
	if rank(b) < rank(a) {
		return b
	}
	return a
}

// availDataSpace is what new data chunks of profile could take from the
// devices' unallocated space. mirrors btrfs_calc_avail_data_space
func (in *Info) availDataSpace(profile uint64) uint64 {
	var avail []uint64
	for _, d := range in.Devices {
		if d.Missing {
			continue
		}
		a := (d.Size - min(d.Allocated, d.Size)) / stripeLen * stripeLen
		devStripes := uint64(1)
		if profile&ondisk.BlockGroupDup != 0 {
			devStripes = 2
		}
		if a <= 1<<20+devStripes*stripeLen {
			continue
		}
		avail = append(avail, a-1<<20)
	}
	nr := len(avail)
	numStripes := 1
	devsMin := 1
	switch {
	case profile&ondisk.BlockGroupRaid0 != 0:
		numStripes = nr
	case profile&(ondisk.BlockGroupRaid1|ondisk.BlockGroupRaid1C3|ondisk.BlockGroupRaid1C4) != 0:
		numStripes = int(NCopies(profile))
		devsMin = numStripes
	case profile&ondisk.BlockGroupRaid10 != 0:
		numStripes, devsMin = 4, 2
	case profile&ondisk.BlockGroupRaid5 != 0:
		devsMin = 2
	case profile&ondisk.BlockGroupRaid6 != 0:
		devsMin = 3
	}
	minStripe := uint64(stripeLen)
	if profile&ondisk.BlockGroupDup != 0 {
		minStripe = 2 * stripeLen
	}
	sort.Slice(avail, func(i, j int) bool { return avail[i] > avail[j] })
	total := uint64(0)
	for i := nr - 1; nr >= devsMin && i >= 0; i, nr = i-1, nr-1 {
		numStripes = min(numStripes, nr)
		if avail[i] >= minStripe {
			a := avail[i]
			total += a * uint64(numStripes)
			for j := i + 1 - numStripes; j <= i; j++ {
				avail[j] -= a
			}
		}
	}
	return total
}
