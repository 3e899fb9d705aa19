package ondisk

import (
	"encoding/binary"
	"fmt"
)

// Block group / chunk type and profile flags.
const (
	BlockGroupData        uint64 = 1 << 0
	BlockGroupSystem      uint64 = 1 << 1
	BlockGroupMetadata    uint64 = 1 << 2
	BlockGroupRaid0       uint64 = 1 << 3
	BlockGroupRaid1       uint64 = 1 << 4
	BlockGroupDup         uint64 = 1 << 5
	BlockGroupRaid10      uint64 = 1 << 6
	BlockGroupRaid5       uint64 = 1 << 7
	BlockGroupRaid6       uint64 = 1 << 8
	BlockGroupRaid1C3     uint64 = 1 << 9
	BlockGroupRaid1C4     uint64 = 1 << 10
	BlockGroupTypeMask           = BlockGroupData | BlockGroupSystem | BlockGroupMetadata
	BlockGroupProfileMask        = BlockGroupRaid0 | BlockGroupRaid1 | BlockGroupDup | BlockGroupRaid10 |
		BlockGroupRaid5 | BlockGroupRaid6 | BlockGroupRaid1C3 | BlockGroupRaid1C4
)

// Sizes of the chunk item parts.
const (
	ChunkItemSize = 48
	StripeSize    = 32
)

// Stripe is struct btrfs_stripe.
type Stripe struct {
	DevID   DevID
	Offset  PhysicalAddr
	DevUUID UUID
}

// Chunk is struct btrfs_chunk with its stripes.
//
//	0x00 length 0x08 owner 0x10 stripe_len 0x18 type 0x20 io_align u32 0x24 io_width u32
//	0x28 sector_size u32 0x2c num_stripes u16 0x2e sub_stripes u16 0x30 stripes[]
type Chunk struct {
	Length     uint64
	Owner      ObjectID
	StripeLen  uint64
	Type       uint64
	IOAlign    uint32
	IOWidth    uint32
	SectorSize uint32
	NumStripes uint16
	SubStripes uint16
	Stripes    []Stripe
}

// DecodeChunk parses a chunk item; it fails if b is too short for its stripes.
func DecodeChunk(b []byte) (Chunk, error) {
	var c Chunk
	if len(b) < ChunkItemSize {
		return c, fmt.Errorf("chunk item: %d bytes, need %d", len(b), ChunkItemSize)
	}
	c.Length = binary.LittleEndian.Uint64(b[0:])
	c.Owner = ObjectID(binary.LittleEndian.Uint64(b[8:]))
	c.StripeLen = binary.LittleEndian.Uint64(b[16:])
	c.Type = binary.LittleEndian.Uint64(b[24:])
	c.IOAlign = binary.LittleEndian.Uint32(b[32:])
	c.IOWidth = binary.LittleEndian.Uint32(b[36:])
	c.SectorSize = binary.LittleEndian.Uint32(b[40:])
	c.NumStripes = binary.LittleEndian.Uint16(b[44:])
	c.SubStripes = binary.LittleEndian.Uint16(b[46:])
	if c.NumStripes == 0 {
		return c, fmt.Errorf("chunk item: zero stripes")
	}
	need := ChunkItemSize + int(c.NumStripes)*StripeSize
	if len(b) < need {
		return c, fmt.Errorf("chunk item: %d bytes, need %d for %d stripes", len(b), need, c.NumStripes)
	}
	c.Stripes = make([]Stripe, c.NumStripes)
	for i := range c.Stripes {
		p := ChunkItemSize + i*StripeSize
		c.Stripes[i].DevID = DevID(binary.LittleEndian.Uint64(b[p:]))
		c.Stripes[i].Offset = PhysicalAddr(binary.LittleEndian.Uint64(b[p+8:]))
		copy(c.Stripes[i].DevUUID[:], b[p+16:p+32])
	}
	return c, nil
}

// Size is the encoded size of the chunk item.
func (c *Chunk) Size() int { return ChunkItemSize + len(c.Stripes)*StripeSize }

// Encode writes the chunk item into b (at least c.Size() bytes).
func (c *Chunk) Encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], c.Length)
	binary.LittleEndian.PutUint64(b[8:], uint64(c.Owner))
	binary.LittleEndian.PutUint64(b[16:], c.StripeLen)
	binary.LittleEndian.PutUint64(b[24:], c.Type)
	binary.LittleEndian.PutUint32(b[32:], c.IOAlign)
	binary.LittleEndian.PutUint32(b[36:], c.IOWidth)
	binary.LittleEndian.PutUint32(b[40:], c.SectorSize)
	binary.LittleEndian.PutUint16(b[44:], uint16(len(c.Stripes)))
	binary.LittleEndian.PutUint16(b[46:], c.SubStripes)
	for i, s := range c.Stripes {
		p := ChunkItemSize + i*StripeSize
		binary.LittleEndian.PutUint64(b[p:], uint64(s.DevID))
		binary.LittleEndian.PutUint64(b[p+8:], uint64(s.Offset))
		copy(b[p+16:p+32], s.DevUUID[:])
	}
}
