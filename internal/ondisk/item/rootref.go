package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// RootRefHeaderSize is struct btrfs_root_ref without its name.
const RootRefHeaderSize = 18

// RootRef is a ROOT_REF (key: parent tree, ROOT_REF, child tree) or
// ROOT_BACKREF (key: child tree, ROOT_BACKREF, parent tree) item: where a
// subvolume is linked into its parent.
//
//	0 dirid 8 sequence 16 name_len u16 18 name
type RootRef struct {
	DirID    ondisk.ObjectID
	Sequence uint64
	Name     []byte
}

// DecodeRootRef parses a ROOT_REF or ROOT_BACKREF item.
func DecodeRootRef(b []byte) (RootRef, error) {
	var r RootRef
	if len(b) < RootRefHeaderSize {
		return r, short("root ref", len(b), RootRefHeaderSize)
	}
	r.DirID = ondisk.ObjectID(le.Uint64(b[0:]))
	r.Sequence = le.Uint64(b[8:])
	n := RootRefHeaderSize + int(le.Uint16(b[16:]))
	if len(b) < n {
		return r, short("root ref name", len(b), n)
	}
	r.Name = cloneBytes(b[RootRefHeaderSize:n])
	return r, nil
}

// Size is the encoded size.
func (r *RootRef) Size() int { return RootRefHeaderSize + len(r.Name) }

// Encode writes the item into b (at least r.Size() bytes).
func (r *RootRef) Encode(b []byte) {
	le.PutUint64(b[0:], uint64(r.DirID))
	le.PutUint64(b[8:], r.Sequence)
	le.PutUint16(b[16:], uint16(len(r.Name)))
	copy(b[RootRefHeaderSize:], r.Name)
}

// Bytes encodes to a new slice.
func (r *RootRef) Bytes() []byte {
	b := make([]byte, r.Size())
	r.Encode(b)
	return b
}
