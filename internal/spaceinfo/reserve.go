package spaceinfo

import (
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// unlinkMetadataUnits is BTRFS_UNLINK_METADATA_UNITS: the items an
// unlink changes, which the global reserve must always hold.
const unlinkMetadataUnits = 6

// globalReserve sizes the global block reserve as Linux 6.x does at mount:
// the bytes of the root, extent, csum, free space (and block group) trees,
// at least what an unlink and its delayed refs need, at most 512 MiB.
// mirrors btrfs_update_global_block_rsv
func globalReserve(fi *fsinfo.FSInfo) (uint64, error) {
	sb := fi.Super
	// the root tree's own used bytes: the kernel starts it at 0 at mount
	// (the root tree has no ROOT_ITEM) and counts what the mount allocates
	num := uint64(0)
	minItems := uint64(1)
	trees := []ondisk.ObjectID{ondisk.ExtentTreeObjectID, ondisk.CsumTreeObjectID}
	if sb.CompatROFlags&ondisk.CompatROFreeSpaceTree != 0 {
		trees = append(trees, ondisk.FreeSpaceTreeObjectID)
	}
	if sb.CompatROFlags&ondisk.CompatROBlockGroupTree != 0 {
		trees = append(trees, ondisk.BlockGroupTreeObjectID)
	}
	for _, id := range trees {
		ri, _, err := fi.RootItem(id)
		if errors.Is(err, fsinfo.ErrNoTree) {
			continue
		}
		if err != nil {
			return 0, err
		}
		num += ri.BytesUsed
		minItems++
	}
	minItems += unlinkMetadataUnits
	insert := func(items uint64) uint64 { return uint64(sb.NodeSize) * ondisk.MaxLevel * 2 * items }
	delayedRefs := insert(unlinkMetadataUnits)
	if sb.CompatROFlags&ondisk.CompatROFreeSpaceTree != 0 {
		delayedRefs *= 2 // btrfs_calc_delayed_ref_bytes: the free space tree changes too
	}
	return min(max(num, insert(minItems)+delayedRefs), 512<<20), nil
}
