package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// InodeExtrefHeaderSize is struct btrfs_inode_extref without its name.
const InodeExtrefHeaderSize = 18

// InodeExtref is one entry of an INODE_EXTREF item (key: inode, INODE_EXTREF,
// ExtentDataRefHash-style hash of parent and name; see ExtrefHash).
//
//	0 parent_objectid 8 index 16 name_len u16 18 name
type InodeExtref struct {
	Parent ondisk.ObjectID
	Index  uint64
	Name   []byte
}

// InodeExtrefs is an INODE_EXTREF item (entries whose key hashes collide).
type InodeExtrefs []InodeExtref

// ExtrefHash is the key offset of an INODE_EXTREF item. mirrors btrfs_extref_hash
func ExtrefHash(parent ondisk.ObjectID, name []byte) uint64 {
	return uint64(crc32cRaw(uint32(parent), name))
}

// DecodeInodeExtref parses the first entry of b and returns its encoded length.
func DecodeInodeExtref(b []byte) (InodeExtref, int, error) {
	var r InodeExtref
	if len(b) < InodeExtrefHeaderSize {
		return r, 0, short("inode extref", len(b), InodeExtrefHeaderSize)
	}
	r.Parent = ondisk.ObjectID(le.Uint64(b[0:]))
	r.Index = le.Uint64(b[8:])
	n := InodeExtrefHeaderSize + int(le.Uint16(b[16:]))
	if len(b) < n {
		return r, 0, short("inode extref name", len(b), n)
	}
	r.Name = cloneBytes(b[InodeExtrefHeaderSize:n])
	return r, n, nil
}

// DecodeInodeExtrefs parses a whole INODE_EXTREF item.
func DecodeInodeExtrefs(b []byte) (InodeExtrefs, error) {
	var out InodeExtrefs
	for p := 0; p < len(b); {
		r, n, err := DecodeInodeExtref(b[p:])
		if err != nil {
			return nil, atOffset(err, p)
		}
		out = append(out, r)
		p += n
	}
	return out, nil
}

// Size is the encoded size of the entry.
func (r *InodeExtref) Size() int { return InodeExtrefHeaderSize + len(r.Name) }

// Encode writes the entry into b (at least r.Size() bytes).
func (r *InodeExtref) Encode(b []byte) {
	le.PutUint64(b[0:], uint64(r.Parent))
	le.PutUint64(b[8:], r.Index)
	le.PutUint16(b[16:], uint16(len(r.Name)))
	copy(b[InodeExtrefHeaderSize:], r.Name)
}

// Size is the encoded size of the item.
func (rs InodeExtrefs) Size() int {
	n := 0
	for i := range rs {
		n += rs[i].Size()
	}
	return n
}

// Encode writes the item into b (at least rs.Size() bytes).
func (rs InodeExtrefs) Encode(b []byte) {
	p := 0
	for i := range rs {
		rs[i].Encode(b[p:])
		p += rs[i].Size()
	}
}

// Bytes encodes to a new slice.
func (rs InodeExtrefs) Bytes() []byte {
	b := make([]byte, rs.Size())
	rs.Encode(b)
	return b
}
