package inode

import "hash/crc32"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// NameHash is the key offset of a DIR_ITEM or XATTR_ITEM for name: the raw
// crc32c of the name seeded with ~1 (no final inversion). mirrors btrfs_name_hash
func NameHash(name []byte) uint64 {
	// crc32.Update inverts on entry and exit; undo both to get the raw form.
	return uint64(^crc32.Update(1, castagnoli, name))
}
