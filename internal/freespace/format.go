package freespace

import (
	"encoding/binary"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// On-disk constants, as in free-space-tree.h and btrfs_tree.h.
const (
	// BitmapSize is BTRFS_FREE_SPACE_BITMAP_SIZE: the data bytes of a full bitmap item.
	BitmapSize = 256
	// BitmapBits is BTRFS_FREE_SPACE_BITMAP_BITS: the sectors one bitmap item covers.
	BitmapBits = BitmapSize * 8
	// InfoSize is sizeof(struct btrfs_free_space_info).
	InfoSize = 8
	// FlagUsingBitmaps is BTRFS_FREE_SPACE_USING_BITMAPS.
	FlagUsingBitmaps uint32 = 1 << 0
	// itemCost is sizeof(struct btrfs_item): what every leaf item costs besides its data.
	itemCost = ondisk.ItemHeaderSize
)

// Info is struct btrfs_free_space_info.
//
//	0x0 extent_count le32  0x4 flags le32
type Info struct {
	ExtentCount uint32
	Flags       uint32
}

// UsingBitmaps reports whether the group's free space is held in bitmaps.
func (i Info) UsingBitmaps() bool { return i.Flags&FlagUsingBitmaps != 0 }

// Encode returns the item data.
func (i Info) Encode() []byte {
	b := make([]byte, InfoSize)
	binary.LittleEndian.PutUint32(b[0:], i.ExtentCount)
	binary.LittleEndian.PutUint32(b[4:], i.Flags)
	return b
}

// DecodeInfo parses FREE_SPACE_INFO data; ok is false if the size is wrong.
func DecodeInfo(b []byte) (Info, bool) {
	if len(b) != InfoSize {
		return Info{}, false
	}
	return Info{
		ExtentCount: binary.LittleEndian.Uint32(b[0:]),
		Flags:       binary.LittleEndian.Uint32(b[4:]),
	}, true
}

// InfoKey is the key of a block group's FREE_SPACE_INFO item.
func InfoKey(bg BlockGroup) ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.ObjectID(bg.Start), Type: ondisk.FreeSpaceInfoKey, Offset: bg.Length}
}

// ExtentKey is the key of the FREE_SPACE_EXTENT item for [start, start+length).
func ExtentKey(start, length uint64) ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.ObjectID(start), Type: ondisk.FreeSpaceExtentKey, Offset: length}
}

// BitmapKey is the key of the FREE_SPACE_BITMAP item covering [start, start+length).
func BitmapKey(start, length uint64) ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.ObjectID(start), Type: ondisk.FreeSpaceBitmapKey, Offset: length}
}

// ItemSize is what an item takes in a leaf: the item header (key included)
// plus its data.
func ItemSize(dataLen int) int { return itemCost + dataLen }
