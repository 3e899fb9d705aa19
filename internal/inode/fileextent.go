package inode

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// File extent types (btrfs_file_extent_item.type).
const (
	ExtentInline   = item.FileExtentInline
	ExtentRegular  = item.FileExtentReg
	ExtentPrealloc = item.FileExtentPrealloc
)

// FileExtent is an EXTENT_DATA item with its key offset.
type FileExtent struct {
	FileOffset uint64 // key offset
	item.FileExtentItem
}

// decodeFileExtent parses an EXTENT_DATA item and checks what the read side
// relies on; every error satisfies errors.Is(err, diskio.ErrCorrupt).
func decodeFileExtent(fileOff uint64, b []byte) (FileExtent, error) {
	x, err := item.DecodeFileExtentItem(b)
	e := FileExtent{FileOffset: fileOff, FileExtentItem: x}
	if err != nil {
		return e, corrupt(err)
	}
	return e, e.check()
}

// CheckFileExtent validates an EXTENT_DATA item at file offset fileOff as
// every reader and writer must before using its addresses: an extent whose
// offset and length reach past its disk extent would read, or write in
// place (NOCOW), someone else's blocks.
func CheckFileExtent(fileOff uint64, x item.FileExtentItem) error {
	e := FileExtent{FileOffset: fileOff, FileExtentItem: x}
	return e.check()
}

// check validates a decoded extent. mirrors check_extent_data_item
func (e *FileExtent) check() error {
	// no encryption or other encoding exists
	if e.Encryption != 0 || e.OtherEncoding != 0 {
		return diskio.Corruptf("file extent: unsupported encryption %d / other encoding %d", e.Encryption, e.OtherEncoding)
	}
	if e.Compression > item.CompressZstd {
		return diskio.Corruptf("file extent: unknown compression %d", e.Compression)
	}
	switch e.Type {
	case ExtentInline:
		if e.Compression == item.CompressNone && uint64(len(e.Inline)) != e.RAMBytes {
			// the kernel trusts the item size for uncompressed inline data
			e.RAMBytes = uint64(len(e.Inline))
		}
		return nil
	case ExtentRegular, ExtentPrealloc:
	default:
		return diskio.Corruptf("file extent: unknown type %d", e.Type)
	}
	if e.NumBytes == 0 {
		return diskio.Corruptf("file extent: num_bytes is 0")
	}
	if e.FileOffset+e.NumBytes < e.FileOffset {
		return diskio.Corruptf("file extent: offset %d + num_bytes %d overflows", e.FileOffset, e.NumBytes)
	}
	if e.Offset+e.NumBytes < e.Offset {
		return diskio.Corruptf("file extent: offset %d + num_bytes %d overflows", e.Offset, e.NumBytes)
	}
	if e.DiskBytenr != 0 && e.Compression == item.CompressNone && e.Offset+e.NumBytes > e.DiskNumBytes {
		return diskio.Corruptf("file extent: offset %d + num_bytes %d beyond disk_num_bytes %d",
			e.Offset, e.NumBytes, e.DiskNumBytes)
	}
	if e.DiskBytenr != 0 && e.Compression != item.CompressNone && e.Offset+e.NumBytes > e.RAMBytes {
		return diskio.Corruptf("file extent: offset %d + num_bytes %d beyond ram_bytes %d",
			e.Offset, e.NumBytes, e.RAMBytes)
	}
	return nil
}

// End is the first file offset after the extent; inline extents cover ram_bytes.
func (e *FileExtent) End() uint64 {
	if e.Type == ExtentInline {
		return e.FileOffset + e.RAMBytes
	}
	return e.FileOffset + e.NumBytes
}

// IsHole reports an explicit hole extent (disk_bytenr 0).
func (e *FileExtent) IsHole() bool { return e.Type != ExtentInline && e.DiskBytenr == 0 }

func (e FileExtent) String() string {
	switch e.Type {
	case ExtentInline:
		return fmt.Sprintf("inline at %d ram %d compression %d", e.FileOffset, e.RAMBytes, e.Compression)
	}
	return fmt.Sprintf("type %d at %d len %d disk %d+%d offset %d compression %d", e.Type, e.FileOffset,
		e.NumBytes, e.DiskBytenr, e.DiskNumBytes, e.Offset, e.Compression)
}
