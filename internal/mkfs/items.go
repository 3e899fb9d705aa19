package mkfs

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Encoders for the few item payloads an empty filesystem holds. Layouts are
// those of uapi/linux/btrfs_tree.h.

var le = binary.LittleEndian

const (
	extentFlagTreeBlock = 1 << 1 // BTRFS_EXTENT_FLAG_TREE_BLOCK
	fileTypeDir         = 2      // BTRFS_FT_DIR
	extentItemSize      = 24     // refs, generation, flags
	treeBlockInfoSize   = ondisk.KeySize + 1
	inlineRefSize       = 9 // type u8 + offset u64
	blockGroupItemSize  = 24
	devExtentSize       = 48
	freeSpaceInfoSize   = 8
	dirItemHeaderSize   = 30
	inodeRefHeaderSize  = 10
)

// metadataExtentItem is the METADATA_ITEM (skinny) or EXTENT_ITEM of a tree
// block, with its TREE_BLOCK_REF inline.
func metadataExtentItem(b *Block, nodesize uint32, gen ondisk.Generation, skinny bool) Item {
	size := extentItemSize + inlineRefSize
	if !skinny {
		size += treeBlockInfoSize
	}
	d := make([]byte, size)
	le.PutUint64(d[0:], 1) // refs
	le.PutUint64(d[8:], uint64(gen))
	le.PutUint64(d[16:], extentFlagTreeBlock)
	p := extentItemSize
	key := ondisk.Key{ObjectID: ondisk.ObjectID(b.Addr), Type: ondisk.MetadataItemKey, Offset: uint64(b.Level)}
	if !skinny {
		// struct btrfs_tree_block_info: the block's first key and level.
		b.FirstKey.Encode(d[p:])
		d[p+ondisk.KeySize] = uint8(b.Level)
		p += treeBlockInfoSize
		key.Type, key.Offset = ondisk.ExtentItemKey, uint64(nodesize)
	}
	d[p] = byte(ondisk.TreeBlockRefKey)
	le.PutUint64(d[p+1:], uint64(b.Owner))
	return Item{Key: key, Data: d}
}

func blockGroupItem(c *chunk, used uint64) Item {
	d := make([]byte, blockGroupItemSize)
	le.PutUint64(d[0:], used)
	le.PutUint64(d[8:], uint64(ondisk.FirstChunkTreeObjectID))
	le.PutUint64(d[16:], c.Type)
	return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(c.Logical), Type: ondisk.BlockGroupItemKey,
		Offset: c.Length}, Data: d}
}

func devExtentItem(e devExtent, chunkTreeUUID ondisk.UUID) Item {
	d := make([]byte, devExtentSize)
	le.PutUint64(d[0:], uint64(ondisk.ChunkTreeObjectID))
	le.PutUint64(d[8:], uint64(ondisk.FirstChunkTreeObjectID))
	le.PutUint64(d[16:], uint64(e.Chunk))
	le.PutUint64(d[24:], e.Length)
	copy(d[32:48], chunkTreeUUID[:])
	return Item{Key: ondisk.Key{ObjectID: 1, Type: ondisk.DevExtentKey, Offset: uint64(e.Physical)}, Data: d}
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
	d := make([]byte, freeSpaceInfoSize)
	le.PutUint32(d[0:], extents)
	le.PutUint32(d[4:], 0) // flags: extents, not bitmaps
	return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(start), Type: ondisk.FreeSpaceInfoKey, Offset: length}, Data: d}
}

// inodeRef is an INODE_REF of ino in dir with one name.
func inodeRef(ino, dir ondisk.ObjectID, index uint64, name string) Item {
	d := make([]byte, inodeRefHeaderSize+len(name))
	le.PutUint64(d[0:], index)
	le.PutUint16(d[8:], uint16(len(name)))
	copy(d[10:], name)
	return Item{Key: ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey, Offset: uint64(dir)}, Data: d}
}

// dirItem is a DIR_ITEM in dir naming location.
func dirItem(dir ondisk.ObjectID, name string, location ondisk.Key, ftype uint8) Item {
	d := make([]byte, dirItemHeaderSize+len(name))
	location.Encode(d[0:])
	le.PutUint64(d[17:], 0) // transid
	le.PutUint16(d[25:], 0) // data_len
	le.PutUint16(d[27:], uint16(len(name)))
	d[29] = ftype
	copy(d[30:], name)
	return Item{Key: ondisk.Key{ObjectID: dir, Type: ondisk.DirItemKey, Offset: nameHash(name)}, Data: d}
}

// uuidItem maps a subvolume uuid to its tree ID in the uuid tree.
func uuidItem(u ondisk.UUID, typ ondisk.ItemType, id ondisk.ObjectID) Item {
	d := make([]byte, 8)
	le.PutUint64(d, uint64(id))
	return Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(le.Uint64(u[0:8])), Type: typ,
		Offset: le.Uint64(u[8:16])}, Data: d}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// nameHash is the DIR_ITEM key offset of name: the kernel's crc32c with
// seed ~1 and no final inversion. mirrors btrfs_name_hash
func nameHash(name string) uint64 {
	return uint64(^crc32.Update(1, castagnoli, []byte(name)))
}
