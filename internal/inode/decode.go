package inode

// Minimal decoders for the items the read side needs. They are unexported
// stand-ins for the internal/ondisk/item decoders being written in parallel
// and can be swapped for item.DirItem, item.InodeRef, item.FileExtentItem and
// item.RootRef once those land.

import (
	"encoding/binary"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

var le = binary.LittleEndian

// dirItemHeaderSize is sizeof(struct btrfs_dir_item):
//
//	0 location(17) 17 transid u64 25 data_len u16 27 name_len u16 29 type u8 30 name, data
const dirItemHeaderSize = 30

// dirItem is one entry of a DIR_ITEM, DIR_INDEX or XATTR_ITEM; several may be
// packed in one item when names collide in the hash.
type dirItem struct {
	Location ondisk.Key
	Transid  uint64
	Type     uint8
	Name     []byte
	Data     []byte
}

// decodeDirItems splits an item's data into its entries. mirrors btrfs_match_dir_item_name's walk
func decodeDirItems(b []byte) ([]dirItem, error) {
	var out []dirItem
	for p := 0; p < len(b); {
		if len(b)-p < dirItemHeaderSize {
			return out, diskio.Corruptf("dir item at byte %d: %d bytes left, need %d", p, len(b)-p, dirItemHeaderSize)
		}
		h := b[p:]
		nameLen := int(le.Uint16(h[27:]))
		dataLen := int(le.Uint16(h[25:]))
		end := dirItemHeaderSize + nameLen + dataLen
		if end > len(h) {
			return out, diskio.Corruptf("dir item at byte %d: name %d + data %d overrun item of %d bytes",
				p, nameLen, dataLen, len(b))
		}
		out = append(out, dirItem{
			Location: ondisk.DecodeKey(h),
			Transid:  le.Uint64(h[17:]),
			Type:     h[29],
			Name:     h[dirItemHeaderSize : dirItemHeaderSize+nameLen],
			Data:     h[dirItemHeaderSize+nameLen : end],
		})
		p += end
	}
	return out, nil
}

// inodeRef is one entry of an INODE_REF item (parent = key offset):
//
//	0 index u64 8 name_len u16 10 name
type inodeRef struct {
	Index uint64
	Name  []byte
}

func decodeInodeRefs(b []byte) ([]inodeRef, error) {
	var out []inodeRef
	for p := 0; p < len(b); {
		if len(b)-p < 10 {
			return out, diskio.Corruptf("inode ref at byte %d: truncated", p)
		}
		n := int(le.Uint16(b[p+8:]))
		if p+10+n > len(b) {
			return out, diskio.Corruptf("inode ref at byte %d: name of %d bytes overruns item", p, n)
		}
		out = append(out, inodeRef{Index: le.Uint64(b[p:]), Name: b[p+10 : p+10+n]})
		p += 10 + n
	}
	return out, nil
}

// inodeExtref is one entry of an INODE_EXTREF item:
//
//	0 parent_objectid u64 8 index u64 16 name_len u16 18 name
type inodeExtref struct {
	Parent ondisk.ObjectID
	Index  uint64
	Name   []byte
}

func decodeInodeExtrefs(b []byte) ([]inodeExtref, error) {
	var out []inodeExtref
	for p := 0; p < len(b); {
		if len(b)-p < 18 {
			return out, diskio.Corruptf("inode extref at byte %d: truncated", p)
		}
		n := int(le.Uint16(b[p+16:]))
		if p+18+n > len(b) {
			return out, diskio.Corruptf("inode extref at byte %d: name of %d bytes overruns item", p, n)
		}
		out = append(out, inodeExtref{Parent: ondisk.ObjectID(le.Uint64(b[p:])), Index: le.Uint64(b[p+8:]),
			Name: b[p+18 : p+18+n]})
		p += 18 + n
	}
	return out, nil
}

// RootRef is struct btrfs_root_ref (ROOT_REF and ROOT_BACKREF items):
//
//	0 dirid u64 8 sequence u64 16 name_len u16 18 name
type RootRef struct {
	DirID    ondisk.ObjectID
	Sequence uint64
	Name     string
}

// DecodeRootRef parses a ROOT_REF / ROOT_BACKREF item.
func DecodeRootRef(b []byte) (RootRef, error) {
	if len(b) < 18 {
		return RootRef{}, diskio.Corruptf("root ref: %d bytes, need 18", len(b))
	}
	n := int(le.Uint16(b[16:]))
	if 18+n > len(b) {
		return RootRef{}, diskio.Corruptf("root ref: name of %d bytes overruns item of %d", n, len(b))
	}
	return RootRef{DirID: ondisk.ObjectID(le.Uint64(b)), Sequence: le.Uint64(b[8:]), Name: string(b[18 : 18+n])}, nil
}

// File extent types and the header size before inline data.
const (
	ExtentInline   = 0
	ExtentRegular  = 1
	ExtentPrealloc = 2

	// fileExtentInlineStart is where inline data begins in the item.
	fileExtentInlineStart = 21
	fileExtentItemSize    = 53
)

// FileExtent is struct btrfs_file_extent_item plus its key offset.
//
//	0 generation 8 ram_bytes 16 compression u8 17 encryption u8 18 other_encoding u16 20 type u8
//	21 disk_bytenr 29 disk_num_bytes 37 offset 45 num_bytes   (regular/prealloc)
//	21 inline data...                                         (inline)
type FileExtent struct {
	FileOffset   uint64 // key offset
	Generation   uint64
	RAMBytes     uint64
	Compression  uint8
	Encryption   uint8
	OtherEncode  uint16
	Type         uint8
	DiskBytenr   ondisk.LogicalAddr
	DiskNumBytes uint64
	Offset       uint64
	NumBytes     uint64
	Inline       []byte // inline data as stored (possibly compressed); aliases the leaf
}

// decodeFileExtent parses an EXTENT_DATA item.
func decodeFileExtent(fileOff uint64, b []byte) (FileExtent, error) {
	var e FileExtent
	if len(b) < fileExtentInlineStart {
		return e, diskio.Corruptf("file extent: %d bytes, need %d", len(b), fileExtentInlineStart)
	}
	e.FileOffset = fileOff
	e.Generation = le.Uint64(b)
	e.RAMBytes = le.Uint64(b[8:])
	e.Compression = b[16]
	e.Encryption = b[17]
	e.OtherEncode = le.Uint16(b[18:])
	e.Type = b[20]
	// mirrors check_extent_data_item: no encryption or other encoding exists
	if e.Encryption != 0 || e.OtherEncode != 0 {
		return e, diskio.Corruptf("file extent: unsupported encryption %d / other encoding %d", e.Encryption, e.OtherEncode)
	}
	if e.Compression > 3 {
		return e, diskio.Corruptf("file extent: unknown compression %d", e.Compression)
	}
	switch e.Type {
	case ExtentInline:
		e.Inline = b[fileExtentInlineStart:]
		if e.Compression == 0 && uint64(len(e.Inline)) != e.RAMBytes {
			// the kernel trusts the item size for uncompressed inline data
			e.RAMBytes = uint64(len(e.Inline))
		}
		return e, nil
	case ExtentRegular, ExtentPrealloc:
	default:
		return e, diskio.Corruptf("file extent: unknown type %d", e.Type)
	}
	if len(b) < fileExtentItemSize {
		return e, diskio.Corruptf("file extent: %d bytes, need %d", len(b), fileExtentItemSize)
	}
	e.DiskBytenr = ondisk.LogicalAddr(le.Uint64(b[21:]))
	e.DiskNumBytes = le.Uint64(b[29:])
	e.Offset = le.Uint64(b[37:])
	e.NumBytes = le.Uint64(b[45:])
	if e.NumBytes == 0 {
		return e, diskio.Corruptf("file extent: num_bytes is 0")
	}
	if e.FileOffset+e.NumBytes < e.FileOffset {
		return e, diskio.Corruptf("file extent: offset %d + num_bytes %d overflows", e.FileOffset, e.NumBytes)
	}
	if e.DiskBytenr != 0 && e.Compression == 0 && e.Offset+e.NumBytes > e.DiskNumBytes && e.Type == ExtentRegular {
		return e, diskio.Corruptf("file extent: offset %d + num_bytes %d beyond disk_num_bytes %d",
			e.Offset, e.NumBytes, e.DiskNumBytes)
	}
	if e.DiskBytenr != 0 && e.Compression != 0 && e.Offset+e.NumBytes > e.RAMBytes {
		return e, diskio.Corruptf("file extent: offset %d + num_bytes %d beyond ram_bytes %d",
			e.Offset, e.NumBytes, e.RAMBytes)
	}
	return e, nil
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
