package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// Root item sizes: the legacy size (up to level) and the full v2 size.
const (
	RootItemSizeV1 = 239
	RootItemSize   = 439
)

// Root item flags.
const (
	RootSubvolRdonly = 1 << 0
	RootSubvolDead   = 1 << 48
)

// RootItem is struct btrfs_root_item.
//
//	0 inode(160) 160 generation 168 root_dirid 176 bytenr 184 byte_limit 192 bytes_used
//	200 last_snapshot 208 flags 216 refs u32 220 drop_progress(17) 237 drop_level u8 238 level u8
//	239 generation_v2 247 uuid 263 parent_uuid 279 received_uuid 295 ctransid 303 otransid
//	311 stransid 319 rtransid 327 ctime 339 otime 351 stime 363 rtime 375 reserved[8]
type RootItem struct {
	Inode        InodeItem
	Generation   ondisk.Generation
	RootDirID    ondisk.ObjectID
	Bytenr       ondisk.LogicalAddr
	ByteLimit    uint64
	BytesUsed    uint64
	LastSnapshot uint64
	Flags        uint64
	Refs         uint32
	DropProgress ondisk.Key
	DropLevel    uint8
	Level        uint8
	GenerationV2 ondisk.Generation
	UUID         ondisk.UUID
	ParentUUID   ondisk.UUID
	ReceivedUUID ondisk.UUID
	Ctransid     uint64
	Otransid     uint64
	Stransid     uint64
	Rtransid     uint64
	Ctime        Timespec
	Otime        Timespec
	Stime        Timespec
	Rtime        Timespec
	// V2 reports whether the item had the full (post-3.x) size.
	V2 bool
}

// DecodeRootItem parses a root item of either size.
func DecodeRootItem(b []byte) (RootItem, error) {
	var r RootItem
	if len(b) < RootItemSizeV1 {
		return r, short("root item", len(b), RootItemSizeV1)
	}
	r.Inode, _ = DecodeInodeItem(b)
	r.Generation = ondisk.Generation(le.Uint64(b[160:]))
	r.RootDirID = ondisk.ObjectID(le.Uint64(b[168:]))
	r.Bytenr = ondisk.LogicalAddr(le.Uint64(b[176:]))
	r.ByteLimit = le.Uint64(b[184:])
	r.BytesUsed = le.Uint64(b[192:])
	r.LastSnapshot = le.Uint64(b[200:])
	r.Flags = le.Uint64(b[208:])
	r.Refs = le.Uint32(b[216:])
	r.DropProgress = ondisk.DecodeKey(b[220:])
	r.DropLevel = b[237]
	r.Level = b[238]
	if len(b) >= RootItemSize {
		r.V2 = true
		r.GenerationV2 = ondisk.Generation(le.Uint64(b[239:]))
		copy(r.UUID[:], b[247:263])
		copy(r.ParentUUID[:], b[263:279])
		copy(r.ReceivedUUID[:], b[279:295])
		r.Ctransid = le.Uint64(b[295:])
		r.Otransid = le.Uint64(b[303:])
		r.Stransid = le.Uint64(b[311:])
		r.Rtransid = le.Uint64(b[319:])
		r.Ctime = DecodeTimespec(b[327:])
		r.Otime = DecodeTimespec(b[339:])
		r.Stime = DecodeTimespec(b[351:])
		r.Rtime = DecodeTimespec(b[363:])
	}
	return r, nil
}

// Encode writes the full-size root item into b (RootItemSize bytes).
func (r *RootItem) Encode(b []byte) {
	clear(b[:RootItemSize])
	r.Inode.Encode(b)
	le.PutUint64(b[160:], uint64(r.Generation))
	le.PutUint64(b[168:], uint64(r.RootDirID))
	le.PutUint64(b[176:], uint64(r.Bytenr))
	le.PutUint64(b[184:], r.ByteLimit)
	le.PutUint64(b[192:], r.BytesUsed)
	le.PutUint64(b[200:], r.LastSnapshot)
	le.PutUint64(b[208:], r.Flags)
	le.PutUint32(b[216:], r.Refs)
	r.DropProgress.Encode(b[220:])
	b[237] = r.DropLevel
	b[238] = r.Level
	le.PutUint64(b[239:], uint64(r.GenerationV2))
	copy(b[247:263], r.UUID[:])
	copy(b[263:279], r.ParentUUID[:])
	copy(b[279:295], r.ReceivedUUID[:])
	le.PutUint64(b[295:], r.Ctransid)
	le.PutUint64(b[303:], r.Otransid)
	le.PutUint64(b[311:], r.Stransid)
	le.PutUint64(b[319:], r.Rtransid)
	r.Ctime.Encode(b[327:])
	r.Otime.Encode(b[339:])
	r.Stime.Encode(b[351:])
	r.Rtime.Encode(b[363:])
}

// Bytes encodes to a new slice.
func (r *RootItem) Bytes() []byte {
	b := make([]byte, RootItemSize)
	r.Encode(b)
	return b
}
