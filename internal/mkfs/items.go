package mkfs

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Items of the few kinds an empty filesystem holds, encoded by the item
// package.

// metadataExtentItem is the METADATA_ITEM (skinny) or EXTENT_ITEM of a tree
// block, with its TREE_BLOCK_REF inline.
func metadataExtentItem(b *Block, nodesize uint32, gen ondisk.Generation, skinny bool) Item {
	refs := []item.InlineRef{{Type: ondisk.TreeBlockRefKey, Offset: uint64(b.Owner)}}
	if skinny {
		m := item.MetadataItem{Refs: 1, Generation: gen, Flags: item.ExtentFlagTreeBlock, Inline: refs}
		return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(b.Addr), Type: ondisk.MetadataItemKey,
			Offset: uint64(b.Level)}, Data: m.Bytes()}
	}
	// struct btrfs_tree_block_info: the block's first key and level.
	e := item.ExtentItem{Refs: 1, Generation: gen, Flags: item.ExtentFlagTreeBlock,
		TreeBlock: item.TreeBlockInfo{Key: b.FirstKey, Level: uint8(b.Level)}, Inline: refs}
	return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(b.Addr), Type: ondisk.ExtentItemKey,
		Offset: uint64(nodesize)}, Data: e.Bytes()}
}

func blockGroupItem(c *chunk, used uint64) Item {
	x := item.BlockGroupItem{Used: used, ChunkObjectID: ondisk.FirstChunkTreeObjectID, Flags: c.Type}
	return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(c.Logical), Type: ondisk.BlockGroupItemKey,
		Offset: c.Length}, Data: x.Bytes()}
}

func devExtentItem(e devExtent, chunkTreeUUID ondisk.UUID) Item {
	x := item.DevExtent{ChunkTree: ondisk.ChunkTreeObjectID, ChunkObjectID: ondisk.FirstChunkTreeObjectID,
		ChunkOffset: e.Chunk, Length: e.Length, ChunkTreeUUID: chunkTreeUUID}
	return Item{Key: ondisk.Key{ObjectID: 1, Type: ondisk.DevExtentKey, Offset: uint64(e.Physical)}, Data: x.Bytes()}
}

// chunkItem encodes c as stored in the chunk tree and sys_chunk_array.
func chunkItem(c *chunk, sectorsize uint32, devUUID ondisk.UUID) ondisk.Chunk {
	oc := ondisk.Chunk{
		Length: c.Length, Owner: ondisk.ExtentTreeObjectID, StripeLen: stripeLen, Type: c.Type,
		IOAlign: stripeLen, IOWidth: stripeLen, SectorSize: sectorsize,
		NumStripes: uint16(len(c.Stripes)), SubStripes: 1,
	}
	for _, s := range c.Stripes {
		oc.Stripes = append(oc.Stripes, ondisk.Stripe{DevID: 1, Offset: s, DevUUID: devUUID})
	}
	return oc
}

func chunkTreeItem(c *chunk, sectorsize uint32, devUUID ondisk.UUID) Item {
	oc := chunkItem(c, sectorsize, devUUID)
	d := make([]byte, oc.Size())
	oc.Encode(d)
	return Item{Key: chunkKey(c), Data: d}
}

func chunkKey(c *chunk) ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.FirstChunkTreeObjectID, Type: ondisk.ChunkItemKey, Offset: uint64(c.Logical)}
}

func freeSpaceInfoItem(start, length uint64, extents uint32) Item {
	x := item.FreeSpaceInfo{ExtentCount: extents} // flags 0: extents, not bitmaps
	return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(start), Type: ondisk.FreeSpaceInfoKey, Offset: length},
		Data: x.Bytes()}
}

// inodeRef is an INODE_REF of ino in dir with one name.
func inodeRef(ino, dir ondisk.ObjectID, index uint64, name string) Item {
	x := item.InodeRefs{{Index: index, Name: []byte(name)}}
	return Item{Key: ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey, Offset: uint64(dir)}, Data: x.Bytes()}
}

// dirItem is a DIR_ITEM in dir naming location.
func dirItem(dir ondisk.ObjectID, name string, location ondisk.Key, ftype uint8) Item {
	x := item.DirItem{Location: location, Type: ftype, Name: []byte(name)}
	return Item{Key: ondisk.Key{ObjectID: dir, Type: ondisk.DirItemKey, Offset: item.NameHash(x.Name)}, Data: x.Bytes()}
}

// uuidItem maps a subvolume uuid to its tree ID in the uuid tree.
func uuidItem(u ondisk.UUID, typ ondisk.ItemType, id ondisk.ObjectID) Item {
	x := item.UUIDItem{SubvolIDs: []uint64{uint64(id)}}
	oid, off := item.UUIDKey(u)
	return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(oid), Type: typ, Offset: off}, Data: x.Bytes()}
}
