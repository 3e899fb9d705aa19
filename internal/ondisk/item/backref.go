package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// Sizes of the keyed back reference items.
const (
	ExtentDataRefSize = 28
	SharedDataRefSize = 4
)

// TreeBlockRef is a keyed TREE_BLOCK_REF item (key: bytenr, TREE_BLOCK_REF,
// root). It has no data; everything is in the key.
type TreeBlockRef struct{}

// SharedBlockRef is a keyed SHARED_BLOCK_REF item (key: bytenr,
// SHARED_BLOCK_REF, parent block). It has no data.
type SharedBlockRef struct{}

// DecodeTreeBlockRef accepts a TREE_BLOCK_REF item (no data is read).
func DecodeTreeBlockRef(b []byte) (TreeBlockRef, error) { return TreeBlockRef{}, nil }

// DecodeSharedBlockRef accepts a SHARED_BLOCK_REF item (no data is read).
func DecodeSharedBlockRef(b []byte) (SharedBlockRef, error) { return SharedBlockRef{}, nil }

// Size is 0.
func (TreeBlockRef) Size() int { return 0 }

// Encode writes nothing.
func (TreeBlockRef) Encode(b []byte) {}

// Bytes returns an empty slice.
func (TreeBlockRef) Bytes() []byte { return []byte{} }

// Size is 0.
func (SharedBlockRef) Size() int { return 0 }

// Encode writes nothing.
func (SharedBlockRef) Encode(b []byte) {}

// Bytes returns an empty slice.
func (SharedBlockRef) Bytes() []byte { return []byte{} }

// ExtentDataRef is struct btrfs_extent_data_ref: a data extent referenced
// by file offset Offset of inode ObjectID in tree Root, Count times. Keyed
// items have key (bytenr, EXTENT_DATA_REF, ExtentDataRefHash(...)).
//
//	0 root 8 objectid 16 offset 24 count u32
type ExtentDataRef struct {
	Root     ondisk.ObjectID
	ObjectID ondisk.ObjectID
	Offset   uint64
	Count    uint32
}

// DecodeExtentDataRef parses an extent data ref.
func DecodeExtentDataRef(b []byte) (ExtentDataRef, error) {
	var r ExtentDataRef
	if len(b) < ExtentDataRefSize {
		return r, short("extent data ref", len(b), ExtentDataRefSize)
	}
	r.Root = ondisk.ObjectID(le.Uint64(b[0:]))
	r.ObjectID = ondisk.ObjectID(le.Uint64(b[8:]))
	r.Offset = le.Uint64(b[16:])
	r.Count = le.Uint32(b[24:])
	return r, nil
}

// Size is ExtentDataRefSize.
func (r *ExtentDataRef) Size() int { return ExtentDataRefSize }

// Encode writes the ref into b.
func (r *ExtentDataRef) Encode(b []byte) {
	le.PutUint64(b[0:], uint64(r.Root))
	le.PutUint64(b[8:], uint64(r.ObjectID))
	le.PutUint64(b[16:], r.Offset)
	le.PutUint32(b[24:], r.Count)
}

// Bytes encodes to a new slice.
func (r *ExtentDataRef) Bytes() []byte {
	b := make([]byte, ExtentDataRefSize)
	r.Encode(b)
	return b
}

// SharedDataRef is struct btrfs_shared_data_ref (key: bytenr,
// SHARED_DATA_REF, parent block).
type SharedDataRef struct {
	Count uint32
}

// DecodeSharedDataRef parses a shared data ref.
func DecodeSharedDataRef(b []byte) (SharedDataRef, error) {
	if len(b) < SharedDataRefSize {
		return SharedDataRef{}, short("shared data ref", len(b), SharedDataRefSize)
	}
	return SharedDataRef{le.Uint32(b)}, nil
}

// Size is SharedDataRefSize.
func (r *SharedDataRef) Size() int { return SharedDataRefSize }

// Encode writes the ref into b.
func (r *SharedDataRef) Encode(b []byte) { le.PutUint32(b, r.Count) }

// Bytes encodes to a new slice.
func (r *SharedDataRef) Bytes() []byte {
	b := make([]byte, SharedDataRefSize)
	r.Encode(b)
	return b
}
