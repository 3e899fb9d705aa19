package item

import "fmt"

// UUIDItem is a UUID_KEY_SUBVOL or UUID_KEY_RECEIVED_SUBVOL item of the
// uuid tree (key: first 8 bytes of the uuid, type, last 8 bytes, both read
// little-endian): the subvolume IDs with that uuid.
type UUIDItem struct {
	SubvolIDs []uint64
}

// UUIDKey splits a uuid into the objectid and offset of its uuid tree key.
func UUIDKey(u [16]byte) (objectid, offset uint64) {
	return le.Uint64(u[0:8]), le.Uint64(u[8:16])
}

// DecodeUUIDItem parses a uuid item; its size must be a multiple of 8.
func DecodeUUIDItem(b []byte) (UUIDItem, error) {
	if len(b)%8 != 0 {
		return UUIDItem{}, fmt.Errorf("uuid item: size %d is not a multiple of 8", len(b))
	}
	var x UUIDItem
	for p := 0; p < len(b); p += 8 {
		x.SubvolIDs = append(x.SubvolIDs, le.Uint64(b[p:]))
	}
	return x, nil
}

// Size is the encoded size.
func (x *UUIDItem) Size() int { return 8 * len(x.SubvolIDs) }

// Encode writes the item into b.
func (x *UUIDItem) Encode(b []byte) {
	for i, id := range x.SubvolIDs {
		le.PutUint64(b[i*8:], id)
	}
}

// Bytes encodes to a new slice.
func (x *UUIDItem) Bytes() []byte {
	b := make([]byte, x.Size())
	x.Encode(b)
	return b
}
