package print

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// The names below are btrfs-progs 6.2's (print-tree.c), which differ from
// ondisk's in places: 6.2 knows no EXTENT_OWNER_REF, RAID_STRIPE or
// RAID_STRIPE_TREE, and has CSUM_ITEM, UNTYPED, DEV_ITEMS, FIRST_CHUNK_TREE.

// csumItemKey is the long-gone CSUM_ITEM type that 6.2 still names.
const csumItemKey ondisk.ItemType = 120

var keyTypeNames = map[ondisk.ItemType]string{
	ondisk.InodeItemKey:          "INODE_ITEM",
	ondisk.InodeRefKey:           "INODE_REF",
	ondisk.InodeExtrefKey:        "INODE_EXTREF",
	ondisk.DirItemKey:            "DIR_ITEM",
	ondisk.DirIndexKey:           "DIR_INDEX",
	ondisk.DirLogItemKey:         "DIR_LOG_ITEM",
	ondisk.DirLogIndexKey:        "DIR_LOG_INDEX",
	ondisk.XattrItemKey:          "XATTR_ITEM",
	ondisk.VerityDescItemKey:     "VERITY_DESC_ITEM",
	ondisk.VerityMerkleItemKey:   "VERITY_MERKLE_ITEM",
	ondisk.OrphanItemKey:         "ORPHAN_ITEM",
	ondisk.RootItemKey:           "ROOT_ITEM",
	ondisk.RootRefKey:            "ROOT_REF",
	ondisk.RootBackrefKey:        "ROOT_BACKREF",
	ondisk.ExtentItemKey:         "EXTENT_ITEM",
	ondisk.MetadataItemKey:       "METADATA_ITEM",
	ondisk.TreeBlockRefKey:       "TREE_BLOCK_REF",
	ondisk.SharedBlockRefKey:     "SHARED_BLOCK_REF",
	ondisk.ExtentDataRefKey:      "EXTENT_DATA_REF",
	ondisk.SharedDataRefKey:      "SHARED_DATA_REF",
	ondisk.ExtentRefV0Key:        "EXTENT_REF_V0",
	csumItemKey:                  "CSUM_ITEM",
	ondisk.ExtentCsumKey:         "EXTENT_CSUM",
	ondisk.ExtentDataKey:         "EXTENT_DATA",
	ondisk.BlockGroupItemKey:     "BLOCK_GROUP_ITEM",
	ondisk.FreeSpaceInfoKey:      "FREE_SPACE_INFO",
	ondisk.FreeSpaceExtentKey:    "FREE_SPACE_EXTENT",
	ondisk.FreeSpaceBitmapKey:    "FREE_SPACE_BITMAP",
	ondisk.ChunkItemKey:          "CHUNK_ITEM",
	ondisk.DevItemKey:            "DEV_ITEM",
	ondisk.DevExtentKey:          "DEV_EXTENT",
	ondisk.TemporaryItemKey:      "TEMPORARY_ITEM",
	ondisk.DevReplaceKey:         "DEV_REPLACE",
	ondisk.StringItemKey:         "STRING_ITEM",
	ondisk.QgroupStatusKey:       "QGROUP_STATUS",
	ondisk.QgroupRelationKey:     "QGROUP_RELATION",
	ondisk.QgroupInfoKey:         "QGROUP_INFO",
	ondisk.QgroupLimitKey:        "QGROUP_LIMIT",
	ondisk.PersistentItemKey:     "PERSISTENT_ITEM",
	ondisk.UUIDKeySubvol:         "UUID_KEY_SUBVOL",
	ondisk.UUIDKeyReceivedSubvol: "UUID_KEY_RECEIVED_SUBVOL",
}

// KeyTypeName names an item type. mirrors print_key_type
func KeyTypeName(objectid ondisk.ObjectID, t ondisk.ItemType) string {
	if t == 0 && objectid == ondisk.FreeSpaceObjectID {
		return "UNTYPED"
	}
	if n, ok := keyTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("UNKNOWN.%d", uint8(t))
}

var objectIDNames = map[ondisk.ObjectID]string{
	ondisk.ExtentTreeObjectID:     "EXTENT_TREE",
	ondisk.ChunkTreeObjectID:      "CHUNK_TREE",
	ondisk.DevTreeObjectID:        "DEV_TREE",
	ondisk.FSTreeObjectID:         "FS_TREE",
	ondisk.RootTreeDirObjectID:    "ROOT_TREE_DIR",
	ondisk.CsumTreeObjectID:       "CSUM_TREE",
	ondisk.BalanceObjectID:        "BALANCE",
	ondisk.OrphanObjectID:         "ORPHAN",
	ondisk.TreeLogObjectID:        "TREE_LOG",
	ondisk.TreeLogFixupObjectID:   "LOG_FIXUP",
	ondisk.TreeRelocObjectID:      "TREE_RELOC",
	ondisk.DataRelocTreeObjectID:  "DATA_RELOC_TREE",
	ondisk.ExtentCsumObjectID:     "EXTENT_CSUM",
	ondisk.FreeSpaceObjectID:      "FREE_SPACE",
	ondisk.FreeInoObjectID:        "FREE_INO",
	ondisk.QuotaTreeObjectID:      "QUOTA_TREE",
	ondisk.UUIDTreeObjectID:       "UUID_TREE",
	ondisk.FreeSpaceTreeObjectID:  "FREE_SPACE_TREE",
	ondisk.MultipleObjectID:       "MULTIPLE",
	ondisk.BlockGroupTreeObjectID: "BLOCK_GROUP_TREE",
	^ondisk.ObjectID(0):           "-1",
}

// ObjectIDString names an objectid the way it reads with item type t.
// mirrors print_objectid
func ObjectIDString(objectid ondisk.ObjectID, t ondisk.ItemType) string {
	switch t {
	case ondisk.PersistentItemKey:
		if objectid == ondisk.DevStatsObjectID {
			return "DEV_STATS"
		}
		return fmt.Sprintf("%d", uint64(objectid))
	case ondisk.DevExtentKey:
		return fmt.Sprintf("%d", uint64(objectid))
	case ondisk.QgroupRelationKey:
		return qgroupString(uint64(objectid))
	case ondisk.UUIDKeySubvol, ondisk.UUIDKeyReceivedSubvol:
		return fmt.Sprintf("0x%016x", uint64(objectid))
	}
	switch objectid {
	case ondisk.RootTreeObjectID:
		if t == ondisk.DevItemKey {
			return "DEV_ITEMS"
		}
		return "ROOT_TREE"
	case ondisk.FirstChunkTreeObjectID:
		if t == ondisk.ChunkItemKey {
			return "FIRST_CHUNK_TREE"
		}
	}
	if n, ok := objectIDNames[objectid]; ok {
		return n
	}
	return fmt.Sprintf("%d", uint64(objectid))
}

func qgroupString(id uint64) string {
	return fmt.Sprintf("%d/%d", item.QgroupLevel(id), item.QgroupSubvolID(id))
}

// KeyString formats a key as btrfs-progs prints it after "key ":
// "(256 INODE_ITEM 0)". mirrors btrfs_print_key
func KeyString(k ondisk.Key) string {
	obj := ObjectIDString(k.ObjectID, k.Type)
	typ := KeyTypeName(k.ObjectID, k.Type)
	var off string
	switch k.Type {
	case ondisk.QgroupRelationKey, ondisk.QgroupInfoKey, ondisk.QgroupLimitKey:
		off = qgroupString(k.Offset)
	case ondisk.UUIDKeySubvol, ondisk.UUIDKeyReceivedSubvol:
		off = fmt.Sprintf("0x%016x", k.Offset)
	case ondisk.RootItemKey:
		if k.ObjectID == ondisk.TreeRelocObjectID {
			off = ObjectIDString(ondisk.ObjectID(k.Offset), k.Type)
		} else {
			off = fmt.Sprintf("%d", k.Offset)
		}
	default:
		if k.Offset == ^uint64(0) {
			off = "-1"
		} else {
			off = fmt.Sprintf("%d", k.Offset)
		}
	}
	return "(" + obj + " " + typ + " " + off + ")"
}
