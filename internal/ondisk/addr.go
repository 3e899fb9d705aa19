// Package ondisk defines btrfs's on-disk structures and encodes and decodes
// them: keys, object IDs, item types, the node header and the superblock.
// Layouts mirror uapi/linux/btrfs_tree.h; every multi-byte field is little-endian.
package ondisk

import "fmt"

// LogicalAddr is an address in btrfs's logical address space (tree block
// pointers, extent bytenrs); the chunk tree maps it to devices.
type LogicalAddr uint64

// PhysicalAddr is a byte offset on one device.
type PhysicalAddr uint64

// ObjectID is the first component of a key: an inode number, a tree ID,
// or one of the special IDs below.
type ObjectID uint64

// Generation is a transaction ID.
type Generation uint64

// DevID identifies a device within the filesystem.
type DevID uint64

func (a LogicalAddr) String() string  { return fmt.Sprintf("%d", uint64(a)) }
func (a PhysicalAddr) String() string { return fmt.Sprintf("%d", uint64(a)) }

// UUID is a 16-byte identifier printed in the usual 8-4-4-4-12 form.
type UUID [16]byte

func (u UUID) String() string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// IsZero reports whether the UUID is all zeros.
func (u UUID) IsZero() bool { return u == UUID{} }
