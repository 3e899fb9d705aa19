// Package ctreetest provides an in-memory ctree.Allocator that checks how the
// B-tree write path uses blocks, and a tree checker, for tests of ctree and
// of the packages built on it.
package ctreetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// FirstAddr is the logical address of the first block Alloc hands out.
const FirstAddr = 1 << 20

// Block is one live tree block as the allocator sees it.
type Block struct {
	Node    *diskio.Node
	Owner   ondisk.ObjectID
	Gen     ondisk.Generation
	Written bool // committed: must never change again
}

// Stats counts allocator calls.
type Stats struct {
	New, Cow, CowInPlace, Free, Dirty int
}

// Alloc is a ctree.Allocator over an in-memory block store. Logical
// addresses map 1:1 to offsets of Dev, where Commit writes the dirty blocks
// (checksummed, WRITTEN flag set); Reader reads them back through the real
// tree-checker. COW copies to a new address; blocks freed in the transaction
// that created them are reused at once, others only after Commit, like the
// kernel's pinned extents.
//
// It records every misuse it sees (COW or free of a block that is not live,
// double free, dirtying a committed block or a stale copy, a committed block
// whose bytes changed); Err returns the first.
type Alloc struct {
	NodeSize      uint32
	FSID          ondisk.UUID
	ChunkTreeUUID ondisk.UUID
	Dev           *blockdev.Memory
	Chunks        *volume.ChunkMap
	Reader        *diskio.Reader
	Stats         Stats

	transid ondisk.Generation
	live    map[ondisk.LogicalAddr]*Block
	snaps   map[ondisk.LogicalAddr]snap // committed bytes of written blocks, live or pinned
	pinned  []ondisk.LogicalAddr
	free    []ondisk.LogicalAddr
	next    ondisk.LogicalAddr
	errs    []error
}

type snap struct {
	gen  ondisk.Generation
	data []byte
}

// New returns an allocator for blocks of nodesize bytes, in transaction 1.
func New(nodesize uint32) *Alloc {
	a := &Alloc{
		NodeSize:      nodesize,
		FSID:          ondisk.UUID{0xf5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		ChunkTreeUUID: ondisk.UUID{0xc7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		Dev:           blockdev.NewMemory(FirstAddr),
		transid:       1,
		live:          map[ondisk.LogicalAddr]*Block{},
		snaps:         map[ondisk.LogicalAddr]snap{},
		next:          FirstAddr,
	}
	a.Chunks = identityChunks()
	a.Reader = a.newReader(a.Dev)
	return a
}

// identityChunks maps logical address L to offset L of device 1.
func identityChunks() *volume.ChunkMap {
	cm := &volume.ChunkMap{}
	err := cm.Insert(0, ondisk.Chunk{Length: 1 << 50, Owner: ondisk.ExtentTreeObjectID, StripeLen: 64 << 10,
		Type: ondisk.BlockGroupMetadata, SectorSize: 4096, NumStripes: 1, Stripes: []ondisk.Stripe{{DevID: 1}}})
	if err != nil {
		panic("ctreetest: bug: " + err.Error())
	}
	return cm
}

func (a *Alloc) newReader(dev blockdev.Device) *diskio.Reader {
	sb := &ondisk.Superblock{FSID: a.FSID, NodeSize: a.NodeSize, SectorSize: 4096, CsumType: uint16(csum.CRC32C)}
	r := diskio.NewReader(dev, sb, a.Chunks, 8<<20)
	r.SynthItems = true // the tests store made-up items
	return r
}

func (a *Alloc) errorf(format string, args ...any) error {
	err := fmt.Errorf("ctreetest: "+format, args...)
	a.errs = append(a.errs, err)
	return err
}

// Err returns the first misuse recorded, or nil.
func (a *Alloc) Err() error {
	if len(a.errs) == 0 {
		return nil
	}
	return errors.Join(a.errs...)
}

// Transid is the running transaction's generation.
func (a *Alloc) Transid() ondisk.Generation { return a.transid }

func (a *Alloc) allocAddr() ondisk.LogicalAddr {
	if n := len(a.free); n > 0 {
		addr := a.free[n-1]
		a.free = a.free[:n-1]
		return addr
	}
	addr := a.next
	a.next += ondisk.LogicalAddr(a.NodeSize)
	return addr
}

// newNode allocates an address and a node with a fresh header.
func (a *Alloc) newNode(owner ondisk.ObjectID, level int) *diskio.Node {
	addr := a.allocAddr()
	delete(a.snaps, addr)
	n := &diskio.Node{Addr: addr, Data: make([]byte, a.NodeSize)}
	h := ondisk.Header{FSID: a.FSID, Bytenr: addr, BackrefRev: ondisk.MixedBackrefRev,
		ChunkTreeUUID: a.ChunkTreeUUID, Generation: a.transid, Owner: owner, Level: uint8(level)}
	h.Encode(n.Data)
	a.live[addr] = &Block{Node: n, Owner: owner, Gen: a.transid}
	return n
}

// NewBlock returns a fresh empty block.
func (a *Alloc) NewBlock(owner ondisk.ObjectID, level int) (*diskio.Node, error) {
	if level < 0 || level >= ondisk.MaxLevel {
		return nil, a.errorf("new block at level %d", level)
	}
	a.Stats.New++
	return a.newNode(owner, level), nil
}

// CowBlock returns n if it is this transaction's and unwritten, else a copy.
func (a *Alloc) CowBlock(owner ondisk.ObjectID, n *diskio.Node, parent *diskio.Node) (*diskio.Node, error) {
	b := a.live[n.Addr]
	switch {
	case b == nil:
		return nil, a.errorf("COW of block %d, which is not live", n.Addr)
	case b.Owner != owner:
		return nil, a.errorf("COW of block %d of tree %d for tree %d", n.Addr, b.Owner, owner)
	case parent != nil && a.live[parent.Addr] == nil:
		return nil, a.errorf("COW of block %d under parent %d, which is not live", n.Addr, parent.Addr)
	}
	if !b.Written && b.Gen == a.transid {
		if b.Node != n {
			return nil, a.errorf("COW of a stale copy of block %d", n.Addr)
		}
		a.Stats.CowInPlace++
		return n, nil
	}
	if s, ok := a.snaps[n.Addr]; ok && !bytes.Equal(n.Data, s.data) {
		return nil, a.errorf("COW of block %d (gen %d): committed bytes were modified in place", n.Addr, s.gen)
	}
	a.Stats.Cow++
	c := a.newNode(owner, n.Level())
	hdr := append([]byte(nil), c.Data[:ondisk.HeaderSize]...)
	copy(c.Data, n.Data)
	copy(c.Data[:ondisk.HeaderSize], hdr)
	binary.LittleEndian.PutUint32(c.Data[0x60:], uint32(n.NumItems()))
	a.release(n.Addr, b)
	return c, nil
}

// FreeBlock releases a live block.
func (a *Alloc) FreeBlock(owner ondisk.ObjectID, n *diskio.Node) error {
	b := a.live[n.Addr]
	switch {
	case b == nil:
		return a.errorf("free of block %d, which is not live (double free?)", n.Addr)
	case b.Owner != owner:
		return a.errorf("free of block %d of tree %d by tree %d", n.Addr, b.Owner, owner)
	case !b.Written && b.Node != n:
		return a.errorf("free of a stale copy of block %d", n.Addr)
	}
	a.Stats.Free++
	a.release(n.Addr, b)
	return nil
}

func (a *Alloc) release(addr ondisk.LogicalAddr, b *Block) {
	delete(a.live, addr)
	if b.Written {
		a.pinned = append(a.pinned, addr)
	} else {
		a.free = append(a.free, addr)
	}
}

// Dirty checks that n is a writable block of this transaction.
func (a *Alloc) Dirty(n *diskio.Node) {
	a.Stats.Dirty++
	b := a.live[n.Addr]
	switch {
	case b == nil:
		a.errorf("dirty of block %d, which is not live", n.Addr)
	case b.Node != n:
		a.errorf("dirty of a stale copy of block %d", n.Addr)
	case b.Written || b.Gen != a.transid:
		a.errorf("dirty of committed block %d (gen %d, transid %d): it should have been COWed", n.Addr, b.Gen, a.transid)
	}
}

// Commit writes every dirty block to Dev (WRITTEN flag, checksum), starts
// the next transaction and makes pinned addresses reusable.
func (a *Alloc) Commit() error {
	for addr, b := range a.live {
		if b.Written {
			continue
		}
		d := b.Node.Data
		flags := binary.LittleEndian.Uint64(d[0x38:])
		binary.LittleEndian.PutUint64(d[0x38:], flags|ondisk.HeaderFlagWritten)
		csum.CRC32C.SetBlock(d)
		if _, err := a.Dev.WriteAt(d, int64(addr)); err != nil {
			return err
		}
		b.Written = true
		a.snaps[addr] = snap{b.Gen, append([]byte(nil), d...)}
	}
	a.transid++
	a.free = append(a.free, a.pinned...)
	a.pinned = nil
	return a.Err()
}

// CheckUnmodified verifies that no committed block changed: neither the
// allocator's copy nor the one in the reader's cache.
func (a *Alloc) CheckUnmodified() error {
	for addr, s := range a.snaps {
		if b := a.live[addr]; b != nil && b.Written && !bytes.Equal(b.Node.Data, s.data) {
			a.errorf("committed block %d (gen %d) modified in place", addr, s.gen)
		}
		if n := a.Reader.Cached(addr); n != nil && n.Generation() == s.gen && !bytes.Equal(n.Data, s.data) {
			a.errorf("committed block %d (gen %d) modified in place in the reader cache", addr, s.gen)
		}
	}
	return a.Err()
}

// Live returns the live blocks by address.
func (a *Alloc) Live() map[ondisk.LogicalAddr]*Block { return a.live }
