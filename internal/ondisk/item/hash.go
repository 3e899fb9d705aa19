package item

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cRaw is the kernel's crc32c(seed, data): no inversion of the seed on
// entry nor of the result on exit (Go's crc32.Update does both).
func crc32cRaw(seed uint32, data []byte) uint32 {
	return ^crc32.Update(^seed, castagnoli, data)
}

// NameHash is the key offset of a DIR_ITEM or XATTR_ITEM for name.
// mirrors btrfs_name_hash
func NameHash(name []byte) uint64 {
	return uint64(crc32cRaw(^uint32(1), name))
}

// ExtentDataRefHash is the key offset of a keyed EXTENT_DATA_REF and the
// sort order of inline ones. mirrors hash_extent_data_ref
func ExtentDataRefHash(root, objectid, offset uint64) uint64 {
	var b [8]byte
	le.PutUint64(b[:], root)
	high := crc32cRaw(^uint32(0), b[:])
	le.PutUint64(b[:], objectid)
	low := crc32cRaw(^uint32(0), b[:])
	le.PutUint64(b[:], offset)
	low = crc32cRaw(low, b[:])
	return uint64(high)<<31 ^ uint64(low)
}

// Hash returns ExtentDataRefHash of the reference.
func (r *ExtentDataRef) Hash() uint64 {
	return ExtentDataRefHash(uint64(r.Root), uint64(r.ObjectID), r.Offset)
}
