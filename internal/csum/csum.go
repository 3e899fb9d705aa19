// Package csum computes btrfs checksums: crc32c, xxhash64, sha256 and
// blake2b-256, stored in the first bytes of a 32-byte checksum field.
package csum

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/crypto/blake2b"
)

// Type is the on-disk csum_type of the superblock.
type Type uint16

// Checksum types.
const (
	CRC32C Type = 0
	XXHash Type = 1
	SHA256 Type = 2
	Blake2 Type = 3
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Size is the number of meaningful bytes of a checksum of this type.
func (t Type) Size() int {
	switch t {
	case CRC32C:
		return 4
	case XXHash:
		return 8
	case SHA256, Blake2:
		return 32
	}
	return 0
}

// Valid reports whether t is a known type.
func (t Type) Valid() bool { return t <= Blake2 }

// String returns the btrfs-progs name of the type.
func (t Type) String() string {
	switch t {
	case CRC32C:
		return "crc32c"
	case XXHash:
		return "xxhash64"
	case SHA256:
		return "sha256"
	case Blake2:
		return "blake2b"
	}
	return fmt.Sprintf("csum-type-%d", uint16(t))
}

// Parse accepts crc32c, xxhash (xxhash64), sha256, blake2 (blake2b).
func Parse(s string) (Type, error) {
	switch s {
	case "crc32c", "crc32":
		return CRC32C, nil
	case "xxhash", "xxhash64":
		return XXHash, nil
	case "sha256":
		return SHA256, nil
	case "blake2", "blake2b":
		return Blake2, nil
	}
	return 0, fmt.Errorf("unknown checksum type %q (want crc32c, xxhash, sha256 or blake2)", s)
}

// Sum returns the checksum of data as stored on disk (Size() bytes).
func (t Type) Sum(data []byte) []byte {
	switch t {
	case CRC32C:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], crc32.Checksum(data, castagnoli))
		return b[:]
	case XXHash:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], xxhash.Sum64(data))
		return b[:]
	case SHA256:
		s := sha256.Sum256(data)
		return s[:]
	case Blake2:
		s := blake2b.Sum256(data)
		return s[:]
	}
	return nil
}

// SumInto writes the checksum of data into dst (at least Size() bytes).
func (t Type) SumInto(dst, data []byte) { copy(dst, t.Sum(data)) }

// Block computes the checksum of a metadata block or superblock: the sum of
// everything after the 32-byte checksum field.
func (t Type) Block(block []byte) []byte { return t.Sum(block[32:]) }

// VerifyBlock reports whether the block's stored checksum matches.
func (t Type) VerifyBlock(block []byte) bool {
	s := t.Block(block)
	for i := range s {
		if block[i] != s[i] {
			return false
		}
	}
	return true
}

// SetBlock stores the block's checksum in its first bytes.
func (t Type) SetBlock(block []byte) {
	for i := 0; i < 32; i++ {
		block[i] = 0
	}
	copy(block, t.Block(block))
}
