package item

// VerityDescItemSize is the size of struct btrfs_verity_descriptor_item.
const VerityDescItemSize = 25

// VerityDesc is the VERITY_DESC_ITEM at offset 0 (key: inode,
// VERITY_DESC_ITEM, 0): the size of the fs-verity descriptor that follows
// in items at offsets 1.. (raw descriptor bytes, see VerityData).
//
//	0 size 8 reserved[2] 24 encryption u8
type VerityDesc struct {
	Size       uint64
	Encryption uint8
}

// DecodeVerityDesc parses the descriptor header item.
func DecodeVerityDesc(b []byte) (VerityDesc, error) {
	if len(b) < VerityDescItemSize {
		return VerityDesc{}, short("verity descriptor item", len(b), VerityDescItemSize)
	}
	return VerityDesc{Size: le.Uint64(b), Encryption: b[24]}, nil
}

// EncodedSize is VerityDescItemSize. (Size is the descriptor size field.)
func (x *VerityDesc) EncodedSize() int { return VerityDescItemSize }

// Encode writes the item into b (reserved zeroed).
func (x *VerityDesc) Encode(b []byte) {
	clear(b[:VerityDescItemSize])
	le.PutUint64(b, x.Size)
	b[24] = x.Encryption
}

// Bytes encodes to a new slice.
func (x *VerityDesc) Bytes() []byte {
	b := make([]byte, VerityDescItemSize)
	x.Encode(b)
	return b
}

// VerityData is a VERITY_DESC_ITEM at a non-zero offset or a
// VERITY_MERKLE_ITEM: raw bytes of the descriptor or the Merkle tree, at the
// key offset (minus 1 for descriptor bytes).
type VerityData struct {
	Data []byte
}

// DecodeVerityData parses a raw verity item (any size).
func DecodeVerityData(b []byte) (VerityData, error) { return VerityData{cloneBytes(b)}, nil }

// Size is the data size.
func (x *VerityData) Size() int { return len(x.Data) }

// Encode writes the data into b.
func (x *VerityData) Encode(b []byte) { copy(b, x.Data) }

// Bytes encodes to a new slice.
func (x *VerityData) Bytes() []byte { return append([]byte(nil), x.Data...) }
