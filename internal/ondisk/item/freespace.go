package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// Free space tree and space cache sizes.
const (
	FreeSpaceInfoSize   = 8
	FreeSpaceHeaderSize = 41
)

// FreeSpaceUsingBitmaps is the FREE_SPACE_INFO flag saying the block group's
// free space is kept as FREE_SPACE_BITMAP items.
const FreeSpaceUsingBitmaps = 1 << 0

// FreeSpaceInfo is a FREE_SPACE_INFO item (key: block group start,
// FREE_SPACE_INFO, length) in the free space tree.
//
//	0 extent_count u32 4 flags u32
type FreeSpaceInfo struct {
	ExtentCount uint32
	Flags       uint32
}

// DecodeFreeSpaceInfo parses a free space info item.
func DecodeFreeSpaceInfo(b []byte) (FreeSpaceInfo, error) {
	if len(b) < FreeSpaceInfoSize {
		return FreeSpaceInfo{}, short("free space info", len(b), FreeSpaceInfoSize)
	}
	return FreeSpaceInfo{le.Uint32(b[0:]), le.Uint32(b[4:])}, nil
}

// Size is FreeSpaceInfoSize.
func (x *FreeSpaceInfo) Size() int { return FreeSpaceInfoSize }

// Encode writes the item into b.
func (x *FreeSpaceInfo) Encode(b []byte) {
	le.PutUint32(b[0:], x.ExtentCount)
	le.PutUint32(b[4:], x.Flags)
}

// Bytes encodes to a new slice.
func (x *FreeSpaceInfo) Bytes() []byte {
	b := make([]byte, FreeSpaceInfoSize)
	x.Encode(b)
	return b
}

// FreeSpaceBitmap is a FREE_SPACE_BITMAP item (key: start, FREE_SPACE_BITMAP,
// length): one bit per sector from start, set when the sector is free, least
// significant bit first. FREE_SPACE_EXTENT items have no data.
type FreeSpaceBitmap struct {
	Bitmap []byte
}

// DecodeFreeSpaceBitmap parses a bitmap item (any size).
func DecodeFreeSpaceBitmap(b []byte) (FreeSpaceBitmap, error) {
	return FreeSpaceBitmap{cloneBytes(b)}, nil
}

// IsFree reports whether sector i of the bitmap is free.
func (x *FreeSpaceBitmap) IsFree(i int) bool {
	return i >= 0 && i/8 < len(x.Bitmap) && x.Bitmap[i/8]&(1<<(i%8)) != 0
}

// Size is the bitmap size.
func (x *FreeSpaceBitmap) Size() int { return len(x.Bitmap) }

// Encode writes the bitmap into b.
func (x *FreeSpaceBitmap) Encode(b []byte) { copy(b, x.Bitmap) }

// Bytes encodes to a new slice.
func (x *FreeSpaceBitmap) Bytes() []byte { return append([]byte(nil), x.Bitmap...) }

// FreeSpaceHeader is struct btrfs_free_space_header of the v1 space cache
// (key: FREE_SPACE objectid, type 0, block group start, in the root tree).
//
//	0 location key(17) 17 generation 25 num_entries 33 num_bitmaps
type FreeSpaceHeader struct {
	Location   ondisk.Key
	Generation uint64
	NumEntries uint64
	NumBitmaps uint64
}

// DecodeFreeSpaceHeader parses a v1 space cache header.
func DecodeFreeSpaceHeader(b []byte) (FreeSpaceHeader, error) {
	if len(b) < FreeSpaceHeaderSize {
		return FreeSpaceHeader{}, short("free space header", len(b), FreeSpaceHeaderSize)
	}
	return FreeSpaceHeader{ondisk.DecodeKey(b), le.Uint64(b[17:]), le.Uint64(b[25:]), le.Uint64(b[33:])}, nil
}

// Size is FreeSpaceHeaderSize.
func (x *FreeSpaceHeader) Size() int { return FreeSpaceHeaderSize }

// Encode writes the header into b.
func (x *FreeSpaceHeader) Encode(b []byte) {
	x.Location.Encode(b)
	le.PutUint64(b[17:], x.Generation)
	le.PutUint64(b[25:], x.NumEntries)
	le.PutUint64(b[33:], x.NumBitmaps)
}

// Bytes encodes to a new slice.
func (x *FreeSpaceHeader) Bytes() []byte {
	b := make([]byte, FreeSpaceHeaderSize)
	x.Encode(b)
	return b
}
