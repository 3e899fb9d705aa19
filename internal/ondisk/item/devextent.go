package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// DevExtentSize is the size of struct btrfs_dev_extent.
const DevExtentSize = 48

// DevExtent is a DEV_EXTENT item (key: devid, DEV_EXTENT, physical start)
// in the device tree: which chunk owns a range of a device.
//
//	0 chunk_tree 8 chunk_objectid 16 chunk_offset 24 length 32 chunk_tree_uuid[16]
type DevExtent struct {
	ChunkTree     ondisk.ObjectID
	ChunkObjectID ondisk.ObjectID
	ChunkOffset   ondisk.LogicalAddr
	Length        uint64
	ChunkTreeUUID ondisk.UUID
}

// DecodeDevExtent parses a dev extent item.
func DecodeDevExtent(b []byte) (DevExtent, error) {
	var x DevExtent
	if len(b) < DevExtentSize {
		return x, short("dev extent", len(b), DevExtentSize)
	}
	x.ChunkTree = ondisk.ObjectID(le.Uint64(b[0:]))
	x.ChunkObjectID = ondisk.ObjectID(le.Uint64(b[8:]))
	x.ChunkOffset = ondisk.LogicalAddr(le.Uint64(b[16:]))
	x.Length = le.Uint64(b[24:])
	copy(x.ChunkTreeUUID[:], b[32:48])
	return x, nil
}

// Size is DevExtentSize.
func (x *DevExtent) Size() int { return DevExtentSize }

// Encode writes the item into b.
func (x *DevExtent) Encode(b []byte) {
	le.PutUint64(b[0:], uint64(x.ChunkTree))
	le.PutUint64(b[8:], uint64(x.ChunkObjectID))
	le.PutUint64(b[16:], uint64(x.ChunkOffset))
	le.PutUint64(b[24:], x.Length)
	copy(b[32:48], x.ChunkTreeUUID[:])
}

// Bytes encodes to a new slice.
func (x *DevExtent) Bytes() []byte {
	b := make([]byte, DevExtentSize)
	x.Encode(b)
	return b
}
