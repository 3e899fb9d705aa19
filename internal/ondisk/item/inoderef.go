package item

// InodeRefHeaderSize is struct btrfs_inode_ref without its name.
const InodeRefHeaderSize = 10

// InodeRef is one entry of an INODE_REF item (key: inode, INODE_REF, parent dir).
//
//	0 index 8 name_len u16 10 name
type InodeRef struct {
	Index uint64
	Name  []byte
}

// InodeRefs is an INODE_REF item: every name the inode has in one directory.
type InodeRefs []InodeRef

// DecodeInodeRef parses the first entry of b and returns its encoded length.
func DecodeInodeRef(b []byte) (InodeRef, int, error) {
	var r InodeRef
	if len(b) < InodeRefHeaderSize {
		return r, 0, short("inode ref", len(b), InodeRefHeaderSize)
	}
	r.Index = le.Uint64(b[0:])
	n := InodeRefHeaderSize + int(le.Uint16(b[8:]))
	if len(b) < n {
		return r, 0, short("inode ref name", len(b), n)
	}
	r.Name = cloneBytes(b[InodeRefHeaderSize:n])
	return r, n, nil
}

// DecodeInodeRefs parses a whole INODE_REF item.
func DecodeInodeRefs(b []byte) (InodeRefs, error) {
	var out InodeRefs
	for p := 0; p < len(b); {
		r, n, err := DecodeInodeRef(b[p:])
		if err != nil {
			return nil, atOffset(err, p)
		}
		out = append(out, r)
		p += n
	}
	return out, nil
}

// Size is the encoded size of the entry.
func (r *InodeRef) Size() int { return InodeRefHeaderSize + len(r.Name) }

// Encode writes the entry into b (at least r.Size() bytes).
func (r *InodeRef) Encode(b []byte) {
	le.PutUint64(b[0:], r.Index)
	le.PutUint16(b[8:], uint16(len(r.Name)))
	copy(b[InodeRefHeaderSize:], r.Name)
}

// Size is the encoded size of the item.
func (rs InodeRefs) Size() int {
	n := 0
	for i := range rs {
		n += rs[i].Size()
	}
	return n
}

// Encode writes the item into b (at least rs.Size() bytes).
func (rs InodeRefs) Encode(b []byte) {
	p := 0
	for i := range rs {
		rs[i].Encode(b[p:])
		p += rs[i].Size()
	}
}

// Bytes encodes to a new slice.
func (rs InodeRefs) Bytes() []byte {
	b := make([]byte, rs.Size())
	rs.Encode(b)
	return b
}
