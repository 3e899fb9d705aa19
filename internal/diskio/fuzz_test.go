package diskio

import (
	"encoding/binary"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

const (
	fuzzNodeSize = 4096
	fuzzLogical  = ondisk.LogicalAddr(1 << 20)
	fuzzPhysical = ondisk.PhysicalAddr(8192)
)

var fuzzFSID = ondisk.UUID{0xf5, 0x1d}

// fuzzLeaf builds a valid leaf with a few items (the fuzzer's starting point).
func fuzzLeaf() []byte {
	b := make([]byte, fuzzNodeSize)
	h := ondisk.Header{FSID: fuzzFSID, Bytenr: fuzzLogical, Flags: ondisk.HeaderFlagWritten,
		BackrefRev: ondisk.MixedBackrefRev, Generation: 7, Owner: ondisk.FSTreeObjectID, NumItems: 3}
	h.Encode(b)
	end := uint32(LeafDataSize(fuzzNodeSize))
	for i, size := range []uint32{160, 12, 0} {
		end -= size
		ondisk.ItemHeader{Key: ondisk.Key{ObjectID: 256, Type: ondisk.ItemType(1 + 11*i)}, Offset: end, Size: size}.Encode(b, i)
	}
	return b
}

// fuzzInternal builds a valid level-1 node with two key pointers.
func fuzzInternal() []byte {
	b := make([]byte, fuzzNodeSize)
	h := ondisk.Header{FSID: fuzzFSID, Bytenr: fuzzLogical, Flags: ondisk.HeaderFlagWritten,
		BackrefRev: ondisk.MixedBackrefRev, Generation: 7, Owner: ondisk.ExtentTreeObjectID, NumItems: 2, Level: 1}
	h.Encode(b)
	ondisk.KeyPtr{Key: ondisk.Key{ObjectID: 1}, BlockPtr: 1 << 22, Generation: 6}.Encode(b, 0)
	ondisk.KeyPtr{Key: ondisk.Key{ObjectID: 900}, BlockPtr: 1 << 23, Generation: 7}.Encode(b, 1)
	return b
}

// FuzzReadNode feeds arbitrary tree blocks, with a correct checksum (and,
// as the fix bits say, the right bytenr and fsid so that the deeper checks
// run), through Reader.ReadNode over a one-chunk map. It must never panic,
// and a block it accepts must be safe to walk with every Node accessor.
func FuzzReadNode(f *testing.F) {
	f.Add(fuzzLeaf(), uint8(3))
	f.Add(fuzzInternal(), uint8(3))
	f.Add(fuzzLeaf(), uint8(0xff))
	f.Add([]byte{}, uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, fix uint8) {
		block := make([]byte, fuzzNodeSize)
		copy(block, data)
		if fix&1 != 0 {
			binary.LittleEndian.PutUint64(block[0x30:], uint64(fuzzLogical))
		}
		if fix&2 != 0 {
			copy(block[0x20:0x30], fuzzFSID[:])
		}
		csum.CRC32C.SetBlock(block)
		dev := blockdev.NewMemory(int64(fuzzPhysical) + fuzzNodeSize)
		if _, err := dev.WriteAt(block, int64(fuzzPhysical)); err != nil {
			t.Fatal(err)
		}
		cm := &volume.ChunkMap{}
		err := cm.Insert(fuzzLogical, ondisk.Chunk{Length: 1 << 20, Owner: 2, StripeLen: 65536,
			Type: ondisk.BlockGroupMetadata, SectorSize: 4096, NumStripes: 1, SubStripes: 1,
			Stripes: []ondisk.Stripe{{DevID: 1, Offset: fuzzPhysical}}})
		if err != nil {
			t.Fatal(err)
		}
		sb := &ondisk.Superblock{NodeSize: fuzzNodeSize, SectorSize: 4096, CsumType: uint16(csum.CRC32C), FSID: fuzzFSID}
		r := NewReader(dev, sb, cm, 1<<20)
		exp := Expect{Level: -1}
		if fix&4 != 0 {
			exp.Tree = ondisk.ObjectID(block[0x58])
		}
		if fix&8 != 0 {
			exp.Level = int(fix>>4) % ondisk.MaxLevel
		}
		if fix&16 != 0 {
			k := ondisk.DecodeKey(block[ondisk.HeaderSize:])
			exp.FirstKey = &k
		}
		n, err := r.ReadNode(fuzzLogical, exp)
		if err != nil {
			return
		}
		walkNode(n)
	})
}

// walkNode calls every accessor on every slot.
func walkNode(n *Node) {
	_ = n.Header()
	for i := 0; i < n.NumItems(); i++ {
		_ = n.Key(i)
		if n.IsLeaf() {
			_ = n.Item(i)
			_ = n.ItemData(i)
		} else {
			_ = n.KeyPtr(i)
		}
	}
	if n.IsLeaf() {
		_ = n.LeafFreeSpace()
	}
}
