package mkfs

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Mixed block groups (the mixed-bg feature, mkfs.btrfs --mixed): data and
// metadata share DATA|METADATA chunks, the nodesize is the sectorsize, and
// both have one profile (single unless asked). mkfs.btrfs then allocates
// one DATA|METADATA chunk where it would allocate the metadata and data
// ones, and its trees take blocks from it.

// mixedType is the block group type of a mixed chunk.
const mixedType = ondisk.BlockGroupData | ondisk.BlockGroupMetadata

// resolveMixedProfiles sets both profiles: the one given for either (they
// must agree), else single. mirrors mkfs.btrfs's "with mixed block groups
// data and metadata profiles must be the same"
func (p *params) resolveMixedProfiles() error {
	switch {
	case p.MetadataProfile == "" && p.DataProfile == "":
		p.MetadataProfile, p.DataProfile = "single", "single"
	case p.MetadataProfile == "":
		p.MetadataProfile = p.DataProfile
	case p.DataProfile == "":
		p.DataProfile = p.MetadataProfile
	}
	var err error
	if p.metaProfile, err = ParseProfile(p.MetadataProfile); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if p.dataProfile, err = ParseProfile(p.DataProfile); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if p.metaProfile != p.dataProfile {
		return fmt.Errorf("with mixed block groups data and metadata profiles must be the same")
	}
	return nil
}

// mixedMinSize is the smallest mixed filesystem mkfs.btrfs accepts: twice
// the temporary system chunk and the least global reserve (a thousand
// nodes). mirrors btrfs_min_dev_size (mixed) + btrfs_min_global_blk_rsv_size
func mixedMinSize(nodesize uint32) uint64 {
	rsv := (uint64(nodesize)<<10 + stripeLen - 1) / stripeLen * stripeLen
	return 2 * (tempSystemChunkSize + rsv)
}

// mixedSteps are the chunk allocations of a mixed mkfs: the temporary
// single DATA|METADATA chunk, then for DUP the SYSTEM and DATA|METADATA
// ones of that profile. mirrors create_metadata_block_groups (mixed) and
// create_raid_groups
func mixedSteps(profile uint64) []uint64 {
	steps := []uint64{mixedType}
	if profile != 0 {
		steps = append(steps, ondisk.BlockGroupSystem|profile, mixedType|profile)
	}
	return steps
}
