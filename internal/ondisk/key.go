package ondisk

import (
	"encoding/binary"
	"fmt"
)

// KeySize is the size of a btrfs_disk_key.
const KeySize = 17

// Key is a btrfs key: (objectid, type, offset), ordered in that order.
type Key struct {
	ObjectID ObjectID
	Type     ItemType
	Offset   uint64
}

// MaxKey is greater than or equal to every key.
var MaxKey = Key{^ObjectID(0), 0xff, ^uint64(0)}

// Compare returns -1, 0 or 1 as k is less than, equal to or greater than o.
// mirrors btrfs_comp_cpu_keys
func (k Key) Compare(o Key) int {
	switch {
	case k.ObjectID < o.ObjectID:
		return -1
	case k.ObjectID > o.ObjectID:
		return 1
	case k.Type < o.Type:
		return -1
	case k.Type > o.Type:
		return 1
	case k.Offset < o.Offset:
		return -1
	case k.Offset > o.Offset:
		return 1
	}
	return 0
}

// Less reports whether k sorts before o.
func (k Key) Less(o Key) bool { return k.Compare(o) < 0 }

// String prints the key as btrfs-progs does: (256 INODE_ITEM 0).
func (k Key) String() string {
	return fmt.Sprintf("(%d %s %d)", uint64(k.ObjectID), k.Type, k.Offset)
}

// DecodeKey reads a disk key from b (at least KeySize bytes).
func DecodeKey(b []byte) Key {
	return Key{
		ObjectID: ObjectID(binary.LittleEndian.Uint64(b[0:])),
		Type:     ItemType(b[8]),
		Offset:   binary.LittleEndian.Uint64(b[9:]),
	}
}

// Encode writes the key into b (at least KeySize bytes).
func (k Key) Encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], uint64(k.ObjectID))
	b[8] = byte(k.Type)
	binary.LittleEndian.PutUint64(b[9:], k.Offset)
}
