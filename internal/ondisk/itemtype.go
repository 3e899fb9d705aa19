package ondisk

import "fmt"

// ItemType is the second component of a key.
type ItemType uint8

// Item types, as in btrfs_tree.h.
const (
	InodeItemKey          ItemType = 1
	InodeRefKey           ItemType = 12
	InodeExtrefKey        ItemType = 13
	XattrItemKey          ItemType = 24
	VerityDescItemKey     ItemType = 36
	VerityMerkleItemKey   ItemType = 37
	OrphanItemKey         ItemType = 48
	DirLogItemKey         ItemType = 60
	DirLogIndexKey        ItemType = 72
	DirItemKey            ItemType = 84
	DirIndexKey           ItemType = 96
	ExtentDataKey         ItemType = 108
	ExtentCsumKey         ItemType = 128
	RootItemKey           ItemType = 132
	RootBackrefKey        ItemType = 144
	RootRefKey            ItemType = 156
	ExtentItemKey         ItemType = 168
	MetadataItemKey       ItemType = 169
	ExtentOwnerRefKey     ItemType = 172
	TreeBlockRefKey       ItemType = 176
	ExtentDataRefKey      ItemType = 178
	ExtentRefV0Key        ItemType = 180
	SharedBlockRefKey     ItemType = 182
	SharedDataRefKey      ItemType = 184
	BlockGroupItemKey     ItemType = 192
	FreeSpaceInfoKey      ItemType = 198
	FreeSpaceExtentKey    ItemType = 199
	FreeSpaceBitmapKey    ItemType = 200
	DevExtentKey          ItemType = 204
	DevItemKey            ItemType = 216
	ChunkItemKey          ItemType = 228
	RaidStripeKey         ItemType = 230
	QgroupStatusKey       ItemType = 240
	QgroupInfoKey         ItemType = 242
	QgroupLimitKey        ItemType = 244
	QgroupRelationKey     ItemType = 246
	TemporaryItemKey      ItemType = 248 // also BALANCE_ITEM
	PersistentItemKey     ItemType = 249 // also DEV_STATS
	DevReplaceKey         ItemType = 250
	UUIDKeySubvol         ItemType = 251
	UUIDKeyReceivedSubvol ItemType = 252
	StringItemKey         ItemType = 253
)

var itemTypeNames = map[ItemType]string{
	InodeItemKey:          "INODE_ITEM",
	InodeRefKey:           "INODE_REF",
	InodeExtrefKey:        "INODE_EXTREF",
	XattrItemKey:          "XATTR_ITEM",
	VerityDescItemKey:     "VERITY_DESC_ITEM",
	VerityMerkleItemKey:   "VERITY_MERKLE_ITEM",
	OrphanItemKey:         "ORPHAN_ITEM",
	DirLogItemKey:         "DIR_LOG_ITEM",
	DirLogIndexKey:        "DIR_LOG_INDEX",
	DirItemKey:            "DIR_ITEM",
	DirIndexKey:           "DIR_INDEX",
	ExtentDataKey:         "EXTENT_DATA",
	ExtentCsumKey:         "EXTENT_CSUM",
	RootItemKey:           "ROOT_ITEM",
	RootBackrefKey:        "ROOT_BACKREF",
	RootRefKey:            "ROOT_REF",
	ExtentItemKey:         "EXTENT_ITEM",
	MetadataItemKey:       "METADATA_ITEM",
	ExtentOwnerRefKey:     "EXTENT_OWNER_REF",
	TreeBlockRefKey:       "TREE_BLOCK_REF",
	ExtentDataRefKey:      "EXTENT_DATA_REF",
	ExtentRefV0Key:        "EXTENT_REF_V0",
	SharedBlockRefKey:     "SHARED_BLOCK_REF",
	SharedDataRefKey:      "SHARED_DATA_REF",
	BlockGroupItemKey:     "BLOCK_GROUP_ITEM",
	FreeSpaceInfoKey:      "FREE_SPACE_INFO",
	FreeSpaceExtentKey:    "FREE_SPACE_EXTENT",
	FreeSpaceBitmapKey:    "FREE_SPACE_BITMAP",
	DevExtentKey:          "DEV_EXTENT",
	DevItemKey:            "DEV_ITEM",
	ChunkItemKey:          "CHUNK_ITEM",
	RaidStripeKey:         "RAID_STRIPE",
	QgroupStatusKey:       "QGROUP_STATUS",
	QgroupInfoKey:         "QGROUP_INFO",
	QgroupLimitKey:        "QGROUP_LIMIT",
	QgroupRelationKey:     "QGROUP_RELATION",
	TemporaryItemKey:      "TEMPORARY_ITEM",
	PersistentItemKey:     "PERSISTENT_ITEM",
	DevReplaceKey:         "DEV_REPLACE",
	UUIDKeySubvol:         "UUID_KEY_SUBVOL",
	UUIDKeyReceivedSubvol: "UUID_KEY_RECEIVED_SUBVOL",
	StringItemKey:         "STRING_ITEM",
}

// String returns the btrfs-progs name of the type ("INODE_ITEM"), or UNKNOWN.N.
func (t ItemType) String() string {
	if n, ok := itemTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN.%d", uint8(t))
}
