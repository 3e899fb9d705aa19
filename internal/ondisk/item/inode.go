package item

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// InodeItemSize is the size of struct btrfs_inode_item.
const InodeItemSize = 160

// Inode flags (btrfs_inode_item.flags).
const (
	InodeNoDataSum    = 1 << 0
	InodeNoDataCow    = 1 << 1
	InodeReadonly     = 1 << 2
	InodeNoCompress   = 1 << 3
	InodePrealloc     = 1 << 4
	InodeSync         = 1 << 5
	InodeImmutable    = 1 << 6
	InodeAppend       = 1 << 7
	InodeNoDump       = 1 << 8
	InodeNoAtime      = 1 << 9
	InodeDirSync      = 1 << 10
	InodeCompress     = 1 << 11
	InodeRootItemInit = 1 << 31
)

// InodeItem is struct btrfs_inode_item.
//
//	0 generation 8 transid 16 size 24 nbytes 32 block_group 40 nlink u32 44 uid u32
//	48 gid u32 52 mode u32 56 rdev 64 flags 72 sequence 80 reserved[4]
//	112 atime 124 ctime 136 mtime 148 otime
type InodeItem struct {
	Generation uint64
	Transid    uint64
	Size       uint64
	NBytes     uint64
	BlockGroup uint64
	NLink      uint32
	UID        uint32
	GID        uint32
	Mode       uint32
	Rdev       ondisk.DevT // device number of a device node
	Flags      uint64
	Sequence   uint64
	Atime      Timespec
	Ctime      Timespec
	Mtime      Timespec
	Otime      Timespec
}

// DecodeInodeItem parses an inode item.
func DecodeInodeItem(b []byte) (InodeItem, error) {
	var x InodeItem
	if len(b) < InodeItemSize {
		return x, short("inode item", len(b), InodeItemSize)
	}
	x.Generation = le.Uint64(b[0:])
	x.Transid = le.Uint64(b[8:])
	x.Size = le.Uint64(b[16:])
	x.NBytes = le.Uint64(b[24:])
	x.BlockGroup = le.Uint64(b[32:])
	x.NLink = le.Uint32(b[40:])
	x.UID = le.Uint32(b[44:])
	x.GID = le.Uint32(b[48:])
	x.Mode = le.Uint32(b[52:])
	x.Rdev = ondisk.DevT(le.Uint64(b[56:]))
	x.Flags = le.Uint64(b[64:])
	x.Sequence = le.Uint64(b[72:])
	x.Atime = DecodeTimespec(b[112:])
	x.Ctime = DecodeTimespec(b[124:])
	x.Mtime = DecodeTimespec(b[136:])
	x.Otime = DecodeTimespec(b[148:])
	return x, nil
}

// Encode writes the inode item into b (InodeItemSize bytes; reserved zeroed).
func (x *InodeItem) Encode(b []byte) {
	clear(b[:InodeItemSize])
	le.PutUint64(b[0:], x.Generation)
	le.PutUint64(b[8:], x.Transid)
	le.PutUint64(b[16:], x.Size)
	le.PutUint64(b[24:], x.NBytes)
	le.PutUint64(b[32:], x.BlockGroup)
	le.PutUint32(b[40:], x.NLink)
	le.PutUint32(b[44:], x.UID)
	le.PutUint32(b[48:], x.GID)
	le.PutUint32(b[52:], x.Mode)
	le.PutUint64(b[56:], uint64(x.Rdev))
	le.PutUint64(b[64:], x.Flags)
	le.PutUint64(b[72:], x.Sequence)
	x.Atime.Encode(b[112:])
	x.Ctime.Encode(b[124:])
	x.Mtime.Encode(b[136:])
	x.Otime.Encode(b[148:])
}

// Bytes encodes to a new slice.
func (x *InodeItem) Bytes() []byte {
	b := make([]byte, InodeItemSize)
	x.Encode(b)
	return b
}
