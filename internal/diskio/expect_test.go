package diskio

import (
	"errors"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// oneBlockReader serves block at fuzzLogical.
func oneBlockReader(t *testing.T, block []byte) *Reader {
	t.Helper()
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
	return NewReader(dev, sb, cm, 1<<20)
}

// TestCachedBlockCheckedAgainstParent: a level-1 node whose key pointer
// points at itself is in the cache once read; reading it again as its own
// child (level 0 expected) must fail although the cache holds it, or every
// walker descends into it for ever.
func TestCachedBlockCheckedAgainstParent(t *testing.T) {
	b := fuzzInternal()
	ondisk.KeyPtr{Key: ondisk.Key{ObjectID: 900}, BlockPtr: fuzzLogical, Generation: 7}.Encode(b, 1)
	r := oneBlockReader(t, b)
	parent, err := r.ReadNode(fuzzLogical, Expect{Tree: ondisk.ExtentTreeObjectID, Level: 1, Generation: 7})
	if err != nil {
		t.Fatal(err)
	}
	if r.Cached(fuzzLogical) == nil {
		t.Fatal("block not cached")
	}
	kp := parent.KeyPtr(1)
	cases := []struct {
		name string
		exp  Expect
		want string
	}{
		{"level", Expect{Tree: ondisk.ExtentTreeObjectID, Level: 0, Generation: kp.Generation}, "level 1, expected 0"},
		{"first key", Expect{Tree: ondisk.ExtentTreeObjectID, Level: 1, Generation: 7, FirstKey: &kp.Key}, "first key"},
		{"owner", Expect{Tree: ondisk.ChunkTreeObjectID, Level: 1, Generation: 7}, "owner EXTENT_TREE, expected CHUNK_TREE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.ReadNode(kp.BlockPtr, c.exp)
			if err == nil {
				t.Fatal("cached block accepted against a parent that disagrees")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.want) ||
				!strings.Contains(err.Error(), "read node 1048576") {
				t.Fatalf("error %q: want ErrCorrupt naming block 1048576 and %q", err, c.want)
			}
			t.Logf("error: %v", err)
		})
	}
	// the block itself is still fine for a parent that agrees
	if _, err := r.ReadNode(fuzzLogical, Expect{Tree: ondisk.ExtentTreeObjectID, Level: 1, Generation: 7}); err != nil {
		t.Fatal(err)
	}
}
