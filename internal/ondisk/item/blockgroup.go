package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// BlockGroupItemSize is the size of struct btrfs_block_group_item.
const BlockGroupItemSize = 24

// BlockGroupItem is a BLOCK_GROUP_ITEM (key: logical start,
// BLOCK_GROUP_ITEM, length), in the extent tree or the block group tree.
//
//	0 used 8 chunk_objectid 16 flags
type BlockGroupItem struct {
	Used          uint64
	ChunkObjectID ondisk.ObjectID
	Flags         uint64
}

// DecodeBlockGroupItem parses a block group item.
func DecodeBlockGroupItem(b []byte) (BlockGroupItem, error) {
	if len(b) < BlockGroupItemSize {
		return BlockGroupItem{}, short("block group item", len(b), BlockGroupItemSize)
	}
	return BlockGroupItem{le.Uint64(b[0:]), ondisk.ObjectID(le.Uint64(b[8:])), le.Uint64(b[16:])}, nil
}

// Size is BlockGroupItemSize.
func (x *BlockGroupItem) Size() int { return BlockGroupItemSize }

// Encode writes the item into b.
func (x *BlockGroupItem) Encode(b []byte) {
	le.PutUint64(b[0:], x.Used)
	le.PutUint64(b[8:], uint64(x.ChunkObjectID))
	le.PutUint64(b[16:], x.Flags)
}

// Bytes encodes to a new slice.
func (x *BlockGroupItem) Bytes() []byte {
	b := make([]byte, BlockGroupItemSize)
	x.Encode(b)
	return b
}
