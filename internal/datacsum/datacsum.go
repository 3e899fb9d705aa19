// Package datacsum looks up and verifies data checksums in the csum tree
// (the kernel's file-item.c csum lookups and the read-side verification of
// inode.c). EXTENT_CSUM items are keyed (EXTENT_CSUM_OBJECTID, EXTENT_CSUM,
// logical start) and hold one checksum per sector, back to back.
package datacsum

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/crypto/blake2b"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Tree is the csum tree with the filesystem's sector size and checksum type.
type Tree struct {
	T          *ctree.Tree
	SectorSize uint32
	Type       csum.Type
}

// Sums holds the checksums of consecutive sectors starting at Start; Has[i]
// is false for a sector the csum tree has no checksum for.
type Sums struct {
	Start ondisk.LogicalAddr
	Size  int // checksum size
	Sums  []byte
	Has   []bool
}

// Sum returns sector i's checksum, or nil when there is none.
func (s *Sums) Sum(i int) []byte {
	if !s.Has[i] {
		return nil
	}
	return s.Sums[i*s.Size : (i+1)*s.Size]
}

// Missing counts sectors without a checksum.
func (s *Sums) Missing() int {
	n := 0
	for _, h := range s.Has {
		if !h {
			n++
		}
	}
	return n
}

// Lookup returns the checksums of the sectors of [start, start+length);
// start and length must be sector-aligned. mirrors btrfs_lookup_csums_list /
// search_csum_tree
func (d *Tree) Lookup(start ondisk.LogicalAddr, length uint64) (*Sums, error) {
	ss := uint64(d.SectorSize)
	if uint64(start)%ss != 0 || length%ss != 0 {
		return nil, fmt.Errorf("csum lookup %d+%d: not aligned to sector size %d", start, length, ss)
	}
	size := d.Type.Size()
	n := int(length / ss)
	s := &Sums{Start: start, Size: size, Sums: make([]byte, n*size), Has: make([]bool, n)}
	if n == 0 {
		return s, nil
	}
	end := uint64(start) + length
	key := ondisk.Key{ObjectID: ondisk.ExtentCsumObjectID, Type: ondisk.ExtentCsumKey, Offset: uint64(start)}
	p, ok, err := d.T.SearchBackward(key)
	if err != nil {
		return nil, fmt.Errorf("csum lookup %d+%d: %w", start, length, err)
	}
	if !ok {
		// nothing at or before start: begin at the first item
		p, ok, err = d.T.SearchForward(key)
	}
	for ; err == nil && ok; ok, err = p.Next() {
		k := p.Key()
		if k.ObjectID != ondisk.ExtentCsumObjectID || k.Type != ondisk.ExtentCsumKey {
			if k.ObjectID > ondisk.ExtentCsumObjectID {
				break
			}
			continue
		}
		if k.Offset >= end {
			break
		}
		data := p.Data()
		if len(data)%size != 0 || k.Offset%ss != 0 {
			return nil, fmt.Errorf("csum lookup %d+%d: item %v in leaf %d: %w", start, length, k, p.Leaf().Addr,
				diskio.Corruptf("%d bytes is not a whole number of %d-byte checksums at a sector boundary", len(data), size))
		}
		itemEnd := k.Offset + uint64(len(data)/size)*ss
		lo, hi := max(k.Offset, uint64(start)), min(itemEnd, end)
		for a := lo; a < hi; a += ss {
			i := int((a - uint64(start)) / ss)
			j := int((a - k.Offset) / ss)
			copy(s.Sums[i*size:(i+1)*size], data[j*size:(j+1)*size])
			s.Has[i] = true
		}
	}
	if err != nil {
		return nil, fmt.Errorf("csum lookup %d+%d: %w", start, length, err)
	}
	return s, nil
}

// Verify checks data (sectors starting at s.Start + firstSector*sectorsize)
// against s and returns the index (relative to data) of the first sector that
// has a checksum and does not match, or -1.
func (d *Tree) Verify(s *Sums, firstSector int, data []byte) int {
	ss := int(d.SectorSize)
	for i := 0; i*ss < len(data); i++ {
		want := s.Sum(firstSector + i)
		if want == nil {
			continue
		}
		if !sumEqual(d.Type, data[i*ss:min((i+1)*ss, len(data))], want) {
			return i
		}
	}
	return -1
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumEqual compares data's checksum with want without allocating.
func sumEqual(t csum.Type, data, want []byte) bool {
	switch t {
	case csum.CRC32C:
		return len(want) >= 4 && crc32.Checksum(data, castagnoli) == binary.LittleEndian.Uint32(want)
	case csum.XXHash:
		return len(want) >= 8 && xxhash.Sum64(data) == binary.LittleEndian.Uint64(want)
	case csum.SHA256:
		s := sha256.Sum256(data)
		return bytes.Equal(s[:], want)
	case csum.Blake2:
		s := blake2b.Sum256(data)
		return bytes.Equal(s[:], want)
	}
	return bytes.Equal(t.Sum(data), want)
}
