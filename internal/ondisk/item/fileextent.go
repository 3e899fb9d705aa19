package item

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// File extent item sizes: the header every item has, and the full size of
// a regular or preallocated extent.
const (
	FileExtentInlineDataStart = 21
	FileExtentItemSize        = 53
)

// File extent types.
const (
	FileExtentInline   = 0
	FileExtentReg      = 1
	FileExtentPrealloc = 2
)

// Compression types (btrfs_file_extent_item.compression).
const (
	CompressNone = 0
	CompressZlib = 1
	CompressLZO  = 2
	CompressZstd = 3
)

// FileExtentItem is struct btrfs_file_extent_item (an EXTENT_DATA item).
// Inline extents keep their data (compressed if Compression is set) in
// Inline and have no disk fields; the others have no Inline.
//
//	0 generation 8 ram_bytes 16 compression u8 17 encryption u8 18 other_encoding u16
//	20 type u8 21 disk_bytenr | inline data 29 disk_num_bytes 37 offset 45 num_bytes
type FileExtentItem struct {
	Generation    ondisk.Generation
	RAMBytes      uint64
	Compression   uint8
	Encryption    uint8
	OtherEncoding uint16
	Type          uint8

	DiskBytenr   ondisk.LogicalAddr
	DiskNumBytes uint64
	Offset       uint64
	NumBytes     uint64

	Inline []byte
}

// DecodeFileExtentItem parses an EXTENT_DATA item. Types other than inline
// are read with the regular layout.
func DecodeFileExtentItem(b []byte) (FileExtentItem, error) {
	var f FileExtentItem
	if len(b) < FileExtentInlineDataStart {
		return f, short("file extent item", len(b), FileExtentInlineDataStart)
	}
	f.Generation = ondisk.Generation(le.Uint64(b[0:]))
	f.RAMBytes = le.Uint64(b[8:])
	f.Compression = b[16]
	f.Encryption = b[17]
	f.OtherEncoding = le.Uint16(b[18:])
	f.Type = b[20]
	if f.Type == FileExtentInline {
		f.Inline = cloneBytes(b[FileExtentInlineDataStart:])
		return f, nil
	}
	if len(b) < FileExtentItemSize {
		return f, fmt.Errorf("file extent item of type %d: %w", f.Type,
			short("file extent item", len(b), FileExtentItemSize))
	}
	f.DiskBytenr = ondisk.LogicalAddr(le.Uint64(b[21:]))
	f.DiskNumBytes = le.Uint64(b[29:])
	f.Offset = le.Uint64(b[37:])
	f.NumBytes = le.Uint64(b[45:])
	return f, nil
}

// IsInline reports whether the item holds its data inline.
func (f *FileExtentItem) IsInline() bool { return f.Type == FileExtentInline }

// Size is the encoded size of the item.
func (f *FileExtentItem) Size() int {
	if f.IsInline() {
		return FileExtentInlineDataStart + len(f.Inline)
	}
	return FileExtentItemSize
}

// Encode writes the item into b (at least f.Size() bytes).
func (f *FileExtentItem) Encode(b []byte) {
	le.PutUint64(b[0:], uint64(f.Generation))
	le.PutUint64(b[8:], f.RAMBytes)
	b[16] = f.Compression
	b[17] = f.Encryption
	le.PutUint16(b[18:], f.OtherEncoding)
	b[20] = f.Type
	if f.IsInline() {
		copy(b[FileExtentInlineDataStart:], f.Inline)
		return
	}
	le.PutUint64(b[21:], uint64(f.DiskBytenr))
	le.PutUint64(b[29:], f.DiskNumBytes)
	le.PutUint64(b[37:], f.Offset)
	le.PutUint64(b[45:], f.NumBytes)
}

// Bytes encodes to a new slice.
func (f *FileExtentItem) Bytes() []byte {
	b := make([]byte, f.Size())
	f.Encode(b)
	return b
}
