package ondisk

import "encoding/binary"

// Node layout sizes.
const (
	CsumSize       = 32  // checksum area at the start of every block
	HeaderSize     = 101 // struct btrfs_header
	ItemHeaderSize = 25  // struct btrfs_item: key, offset u32, size u32
	KeyPtrSize     = 33  // struct btrfs_key_ptr: key, blockptr, generation
	MaxLevel       = 8
)

// Header flags.
const (
	HeaderFlagWritten = 1 << 0
	HeaderFlagReloc   = 1 << 1
	MixedBackrefRev   = 1 // backref revision stored in the top byte of flags
)

// Header is struct btrfs_header, at the start of every tree block.
//
//	0x00 csum[32]  0x20 fsid[16]  0x30 bytenr  0x38 flags (top byte: backref rev)
//	0x40 chunk_tree_uuid[16]  0x50 generation  0x58 owner  0x60 nritems u32  0x64 level u8
type Header struct {
	Csum          [CsumSize]byte
	FSID          UUID
	Bytenr        LogicalAddr
	Flags         uint64 // low 56 bits
	BackrefRev    uint8
	ChunkTreeUUID UUID
	Generation    Generation
	Owner         ObjectID
	NumItems      uint32
	Level         uint8
}

// DecodeHeader parses a node header from b (at least HeaderSize bytes).
func DecodeHeader(b []byte) Header {
	var h Header
	copy(h.Csum[:], b[0:32])
	copy(h.FSID[:], b[0x20:0x30])
	h.Bytenr = LogicalAddr(binary.LittleEndian.Uint64(b[0x30:]))
	f := binary.LittleEndian.Uint64(b[0x38:])
	h.Flags = f & (1<<56 - 1)
	h.BackrefRev = uint8(f >> 56)
	copy(h.ChunkTreeUUID[:], b[0x40:0x50])
	h.Generation = Generation(binary.LittleEndian.Uint64(b[0x50:]))
	h.Owner = ObjectID(binary.LittleEndian.Uint64(b[0x58:]))
	h.NumItems = binary.LittleEndian.Uint32(b[0x60:])
	h.Level = b[0x64]
	return h
}

// Encode writes the header into b (csum included as stored in h).
func (h *Header) Encode(b []byte) {
	copy(b[0:32], h.Csum[:])
	copy(b[0x20:0x30], h.FSID[:])
	binary.LittleEndian.PutUint64(b[0x30:], uint64(h.Bytenr))
	binary.LittleEndian.PutUint64(b[0x38:], h.Flags|uint64(h.BackrefRev)<<56)
	copy(b[0x40:0x50], h.ChunkTreeUUID[:])
	binary.LittleEndian.PutUint64(b[0x50:], uint64(h.Generation))
	binary.LittleEndian.PutUint64(b[0x58:], uint64(h.Owner))
	binary.LittleEndian.PutUint32(b[0x60:], h.NumItems)
	b[0x64] = h.Level
}

// ItemHeader is struct btrfs_item in a leaf: the key and where its data lies,
// Offset counted from the end of the node header.
type ItemHeader struct {
	Key    Key
	Offset uint32
	Size   uint32
}

// DecodeItemHeader parses the i-th item header of a leaf.
func DecodeItemHeader(leaf []byte, i int) ItemHeader {
	p := HeaderSize + i*ItemHeaderSize
	return ItemHeader{
		Key:    DecodeKey(leaf[p:]),
		Offset: binary.LittleEndian.Uint32(leaf[p+17:]),
		Size:   binary.LittleEndian.Uint32(leaf[p+21:]),
	}
}

// Encode writes the item header as the i-th of a leaf.
func (it ItemHeader) Encode(leaf []byte, i int) {
	p := HeaderSize + i*ItemHeaderSize
	it.Key.Encode(leaf[p:])
	binary.LittleEndian.PutUint32(leaf[p+17:], it.Offset)
	binary.LittleEndian.PutUint32(leaf[p+21:], it.Size)
}

// KeyPtr is struct btrfs_key_ptr in an internal node.
type KeyPtr struct {
	Key        Key
	BlockPtr   LogicalAddr
	Generation Generation
}

// DecodeKeyPtr parses the i-th key pointer of a node.
func DecodeKeyPtr(node []byte, i int) KeyPtr {
	p := HeaderSize + i*KeyPtrSize
	return KeyPtr{
		Key:        DecodeKey(node[p:]),
		BlockPtr:   LogicalAddr(binary.LittleEndian.Uint64(node[p+17:])),
		Generation: Generation(binary.LittleEndian.Uint64(node[p+25:])),
	}
}

// Encode writes the key pointer as the i-th of a node.
func (kp KeyPtr) Encode(node []byte, i int) {
	p := HeaderSize + i*KeyPtrSize
	kp.Key.Encode(node[p:])
	binary.LittleEndian.PutUint64(node[p+17:], uint64(kp.BlockPtr))
	binary.LittleEndian.PutUint64(node[p+25:], uint64(kp.Generation))
}
