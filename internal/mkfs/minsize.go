package mkfs

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

const (
	mib                 = 1 << 20
	reservedStart       = 1 * mib // BTRFS_BLOCK_RESERVED_1M_FOR_SUPER: no chunk below it
	tempSystemChunkSize = 4 * mib // BTRFS_MKFS_SYSTEM_GROUP_SIZE
	stripeLen           = 64 << 10
)

// MinSize is the smallest filesystem mkfs.btrfs accepts for these
// profiles without mixed block groups (mixedMinSize with them). For DUP metadata and
// single data it is 109 MiB, for single/single 45 MiB. mirrors btrfs_min_dev_size
func MinSize(nodesize uint32, metaProfile, dataProfile uint64) uint64 {
	// The reserved first MiB, the temporary system chunk, and the temporary
	// single metadata and data chunks.
	size := uint64(reservedStart + tempSystemChunkSize + 2*8*mib)
	meta := uint64(8*mib + 8*mib)
	if metaProfile&ondisk.BlockGroupProfileMask != 0 {
		meta = 8*mib + 32*mib
	}
	if metaProfile&ondisk.BlockGroupDup != 0 {
		meta *= 2
	}
	data := uint64(8 * mib)
	if dataProfile&ondisk.BlockGroupProfileMask != 0 {
		data = 64 * mib
	}
	if dataProfile&ondisk.BlockGroupDup != 0 {
		data *= 2
	}
	return size + meta + data
}
