package ondisk

import "fmt"

// Well-known object IDs (tree IDs and special objects).
const (
	DevStatsObjectID       ObjectID = 0
	RootTreeObjectID       ObjectID = 1
	ExtentTreeObjectID     ObjectID = 2
	ChunkTreeObjectID      ObjectID = 3
	DevTreeObjectID        ObjectID = 4
	FSTreeObjectID         ObjectID = 5
	RootTreeDirObjectID    ObjectID = 6
	CsumTreeObjectID       ObjectID = 7
	QuotaTreeObjectID      ObjectID = 8
	UUIDTreeObjectID       ObjectID = 9
	FreeSpaceTreeObjectID  ObjectID = 10
	BlockGroupTreeObjectID ObjectID = 11
	RaidStripeTreeObjectID ObjectID = 12

	BalanceObjectID        ObjectID = ^ObjectID(0) - 3  // -4
	OrphanObjectID         ObjectID = ^ObjectID(0) - 4  // -5
	TreeLogObjectID        ObjectID = ^ObjectID(0) - 5  // -6
	TreeLogFixupObjectID   ObjectID = ^ObjectID(0) - 6  // -7
	TreeRelocObjectID      ObjectID = ^ObjectID(0) - 7  // -8
	DataRelocTreeObjectID  ObjectID = ^ObjectID(0) - 8  // -9
	ExtentCsumObjectID     ObjectID = ^ObjectID(0) - 9  // -10
	FreeSpaceObjectID      ObjectID = ^ObjectID(0) - 10 // -11
	FreeInoObjectID        ObjectID = ^ObjectID(0) - 11 // -12
	MultipleObjectID       ObjectID = ^ObjectID(0) - 254
	LastFreeObjectID       ObjectID = ^ObjectID(0) - 255 // -256
	FirstFreeObjectID      ObjectID = 256
	FirstChunkTreeObjectID ObjectID = 256
	DevItemsObjectID       ObjectID = 1
	BtreeInodeObjectID     ObjectID = 1
	EmptySubvolDirObjectID ObjectID = 2
)

var treeNames = map[ObjectID]string{
	RootTreeObjectID:       "ROOT_TREE",
	ExtentTreeObjectID:     "EXTENT_TREE",
	ChunkTreeObjectID:      "CHUNK_TREE",
	DevTreeObjectID:        "DEV_TREE",
	FSTreeObjectID:         "FS_TREE",
	RootTreeDirObjectID:    "ROOT_TREE_DIR",
	CsumTreeObjectID:       "CSUM_TREE",
	QuotaTreeObjectID:      "QUOTA_TREE",
	UUIDTreeObjectID:       "UUID_TREE",
	FreeSpaceTreeObjectID:  "FREE_SPACE_TREE",
	BlockGroupTreeObjectID: "BLOCK_GROUP_TREE",
	RaidStripeTreeObjectID: "RAID_STRIPE_TREE",
	BalanceObjectID:        "BALANCE",
	OrphanObjectID:         "ORPHAN",
	TreeLogObjectID:        "TREE_LOG",
	TreeLogFixupObjectID:   "LOG_FIXUP",
	TreeRelocObjectID:      "TREE_RELOC",
	DataRelocTreeObjectID:  "DATA_RELOC_TREE",
	ExtentCsumObjectID:     "EXTENT_CSUM",
	FreeSpaceObjectID:      "FREE_SPACE",
	FreeInoObjectID:        "FREE_INO",
	MultipleObjectID:       "MULTIPLE",
}

// TreeName returns the btrfs-progs name of a tree ID ("FS_TREE"), or its number.
func TreeName(id ObjectID) string {
	if n, ok := treeNames[id]; ok {
		return n
	}
	return fmt.Sprintf("%d", uint64(id))
}

// ParseTreeName accepts a btrfs-progs tree name (root, extent, chunk, dev, fs,
// csum, quota, uuid, free-space, block-group) or a number.
func ParseTreeName(s string) (ObjectID, error) {
	switch s {
	case "root":
		return RootTreeObjectID, nil
	case "extent":
		return ExtentTreeObjectID, nil
	case "chunk":
		return ChunkTreeObjectID, nil
	case "dev", "device":
		return DevTreeObjectID, nil
	case "fs":
		return FSTreeObjectID, nil
	case "csum", "checksum":
		return CsumTreeObjectID, nil
	case "quota":
		return QuotaTreeObjectID, nil
	case "uuid":
		return UUIDTreeObjectID, nil
	case "free-space", "free_space", "free-space-tree":
		return FreeSpaceTreeObjectID, nil
	case "block-group", "block_group", "block-group-tree":
		return BlockGroupTreeObjectID, nil
	case "tree-log", "log":
		return TreeLogObjectID, nil
	case "data-reloc":
		return DataRelocTreeObjectID, nil
	}
	var n uint64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		return 0, fmt.Errorf("unknown tree %q", s)
	}
	return ObjectID(n), nil
}
