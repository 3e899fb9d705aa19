package ondisk

import (
	"fmt"
	"strings"
)

// Compat-RO feature flags.
const (
	CompatROFreeSpaceTree      uint64 = 1 << 0
	CompatROFreeSpaceTreeValid uint64 = 1 << 1
	CompatROVerity             uint64 = 1 << 2
	CompatROBlockGroupTree     uint64 = 1 << 3
	CompatROSupported                 = CompatROFreeSpaceTree | CompatROFreeSpaceTreeValid | CompatROVerity | CompatROBlockGroupTree
)

// Incompat feature flags.
const (
	IncompatMixedBackref   uint64 = 1 << 0
	IncompatDefaultSubvol  uint64 = 1 << 1
	IncompatMixedGroups    uint64 = 1 << 2
	IncompatCompressLZO    uint64 = 1 << 3
	IncompatCompressZstd   uint64 = 1 << 4
	IncompatBigMetadata    uint64 = 1 << 5
	IncompatExtendedIref   uint64 = 1 << 6
	IncompatRaid56         uint64 = 1 << 7
	IncompatSkinnyMetadata uint64 = 1 << 8
	IncompatNoHoles        uint64 = 1 << 9
	IncompatMetadataUUID   uint64 = 1 << 10
	IncompatRaid1C34       uint64 = 1 << 11
	IncompatZoned          uint64 = 1 << 12
	IncompatExtentTreeV2   uint64 = 1 << 13
	IncompatRaidStripeTree uint64 = 1 << 14
	IncompatSimpleQuota    uint64 = 1 << 16
	IncompatSupported             = IncompatMixedBackref | IncompatDefaultSubvol | IncompatMixedGroups |
		IncompatCompressLZO | IncompatCompressZstd | IncompatBigMetadata | IncompatExtendedIref |
		IncompatRaid56 | IncompatSkinnyMetadata | IncompatNoHoles | IncompatMetadataUUID | IncompatRaid1C34
)

var compatRONames = []string{"FREE_SPACE_TREE", "FREE_SPACE_TREE_VALID", "VERITY", "BLOCK_GROUP_TREE"}

var incompatNames = []string{"MIXED_BACKREF", "DEFAULT_SUBVOL", "MIXED_GROUPS", "COMPRESS_LZO",
	"COMPRESS_ZSTD", "BIG_METADATA", "EXTENDED_IREF", "RAID56", "SKINNY_METADATA", "NO_HOLES",
	"METADATA_UUID", "RAID1C34", "ZONED", "EXTENT_TREE_V2", "RAID_STRIPE_TREE", "bit 15", "SIMPLE_QUOTA"}

func flagNames(v uint64, names []string) []string {
	var out []string
	for i := 0; i < 64; i++ {
		if v&(1<<i) == 0 {
			continue
		}
		if i < len(names) {
			out = append(out, names[i])
		} else {
			out = append(out, fmt.Sprintf("bit %d", i))
		}
	}
	return out
}

// IncompatFlagNames names each set incompat flag.
func IncompatFlagNames(v uint64) []string { return flagNames(v, incompatNames) }

// CompatROFlagNames names each set compat_ro flag.
func CompatROFlagNames(v uint64) []string { return flagNames(v, compatRONames) }

// FlagString joins flag names with " |\n\t\t\t  " the way dump-super does, or "" for none.
func FlagString(names []string) string { return strings.Join(names, "|") }
