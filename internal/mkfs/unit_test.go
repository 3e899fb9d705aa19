package mkfs

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

var seedFlag = flag.Int64("seed", 0, "seed for randomized tests (0: time-based)")

func testSeed(t *testing.T) int64 { return testutil.Seed(t, *seedFlag) }

// chunkWant is one chunk as btrfs inspect-internal dump-tree -t chunk shows
// it for an image mkfs.btrfs 6.2 made.
type chunkWant struct {
	logical, length uint64
	typ             string
	phys            []uint64
}

func TestChunkPlanMatchesProgsLayouts(t *testing.T) {
	const M = 1 << 20
	cases := []struct {
		size uint64
		meta string
		want []chunkWant
	}{
		{1 << 30, "dup", []chunkWant{
			{13 * M, 8 * M, "DATA|single", []uint64{13 * M}},
			{21 * M, 8 * M, "SYSTEM|DUP", []uint64{21 * M, 29 * M}},
			{29 * M, 53673984, "METADATA|DUP", []uint64{37 * M, 92471296}},
		}},
		{128 * M, "dup", []chunkWant{
			{13 * M, 8 * M, "DATA|single", []uint64{13 * M}},
			{21 * M, 8 * M, "SYSTEM|DUP", []uint64{21 * M, 29 * M}},
			{29 * M, 32 * M, "METADATA|DUP", []uint64{37 * M, 69 * M}},
		}},
		{10 << 30, "dup", []chunkWant{
			{13 * M, 8 * M, "DATA|single", []uint64{13 * M}},
			{21 * M, 8 * M, "SYSTEM|DUP", []uint64{21 * M, 29 * M}},
			{29 * M, 256 * M, "METADATA|DUP", []uint64{37 * M, 293 * M}},
		}},
		{1 << 30, "single", []chunkWant{
			{1 * M, 4 * M, "SYSTEM|single", []uint64{1 * M}},
			{5 * M, 8 * M, "METADATA|single", []uint64{5 * M}},
			{13 * M, 8 * M, "DATA|single", []uint64{13 * M}},
		}},
	}
	for _, c := range cases {
		r, err := Resolve(Config{MetadataProfile: c.meta}, c.size)
		if err != nil {
			t.Fatalf("%d %s: %v", c.size, c.meta, err)
		}
		if got := fmt.Sprint(chunkWants(r.Chunks)); got != fmt.Sprint(c.want) {
			t.Errorf("size %d -m %s:\n got %v\nwant %v", c.size, c.meta, got, c.want)
		}
	}
}

func chunkWants(cs []ChunkInfo) []chunkWant {
	var out []chunkWant
	for _, c := range cs {
		w := chunkWant{uint64(c.Logical), c.Length, c.TypeString(), nil}
		for _, p := range c.Physical {
			w.phys = append(w.phys, uint64(p))
		}
		out = append(out, w)
	}
	return out
}

func TestMinSize(t *testing.T) {
	if got := MinSize(16384, ondisk.BlockGroupDup, 0); got != 114294784 {
		t.Errorf("DUP minimum %d, want 114294784 (mkfs.btrfs 6.2)", got)
	}
	if got := MinSize(16384, 0, 0); got != 45<<20 {
		t.Errorf("single minimum %d, want 45 MiB", got)
	}
	_, err := Resolve(Config{Size: 100 << 20}, 1<<30)
	var se *SizeError
	if !errors.As(err, &se) || se.Min != 114294784 || !strings.Contains(err.Error(), "109 MiB") {
		t.Errorf("100 MiB DUP: error %v, want a SizeError naming 109 MiB", err)
	}
	if _, err := Resolve(Config{Size: 114294784}, 1<<30); err != nil {
		t.Errorf("exactly the minimum: %v", err)
	}
	if _, err := Resolve(Config{Size: 45 << 20, MetadataProfile: "single"}, 1<<30); err != nil {
		t.Errorf("single at its minimum: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	bgtNoFST, _ := ParseFeatures("block-group-tree,^free-space-tree", Features{})
	mixed := Features{Incompat: DefaultFeatures().Incompat | ondisk.IncompatMixedGroups, CompatRO: DefaultFeatures().CompatRO}
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"nodesize not pow2", Config{NodeSize: 12288}, "power of two"},
		{"nodesize < sectorsize", Config{NodeSize: 2048}, "smaller than the sectorsize"},
		{"nodesize > 64K", Config{NodeSize: 131072}, "larger than 65536"},
		{"sectorsize", Config{SectorSize: 1024}, "invalid sectorsize"},
		{"csum", Config{Csum: csum.Type(9)}, "checksum type"},
		{"profile", Config{MetadataProfile: "raid1"}, "several devices"},
		{"profile unknown", Config{DataProfile: "raid7"}, "unknown profile"},
		{"data dup", Config{DataProfile: "dup"}, "not supported yet"},
		{"bgt needs fst", Config{Features: bgtNoFST}, "requires the no-holes and free-space-tree"},
		{"mixed nodesize", Config{Features: mixed, NodeSize: 16384}, "not equal to 4096 for mixed"},
		{"mixed profiles", Config{Features: mixed, MetadataProfile: "dup", DataProfile: "single"}, "must be the same"},
		{"mixed too small", Config{Features: mixed, Size: 15 << 20}, "too small"},
		{"label", Config{Label: strings.Repeat("x", 256)}, "label"},
		{"too big", Config{Size: 2 << 30}, "larger than the device"},
		{"compress alone", Config{Compress: "zstd"}, "--rootdir"},
	}
	for _, c := range cases {
		_, err := Resolve(c.cfg, 1<<30)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if _, err := ParseFeatures("no-such-thing", Features{}); err == nil || !strings.Contains(err.Error(), "unknown feature") {
		t.Errorf("unknown feature: %v", err)
	}
	f, err := ParseFeatures("^no-holes,block-group-tree", Features{})
	if err == nil {
		err = f.check()
	}
	if err == nil {
		t.Errorf("block-group-tree without no-holes accepted")
	}
}

func TestBadRootdirLeavesDeviceAlone(t *testing.T) {
	dev := blockdev.NewMemory(256 << 20)
	dev.WriteAt([]byte("keep"), 0)
	err := Make(dev, Config{Rootdir: "/nonexistent"})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "rootdir") {
		t.Fatalf("err %v, want a --rootdir not-found error", err)
	}
	if b := dev.Bytes(); string(b[:4]) != "keep" {
		t.Fatalf("device was written")
	}
}

func TestNameHash(t *testing.T) {
	// The DIR_ITEM key of "default" in every mkfs.btrfs image.
	if got := item.NameHash([]byte("default")); got != 2378154706 {
		t.Fatalf("nameHash(default) = %d, want 2378154706", got)
	}
}

// TestReproducible: fixed UUIDs and time give byte-identical images.
func TestReproducible(t *testing.T) {
	cfg := Config{FSID: ondisk.UUID{1}, DevUUID: ondisk.UUID{2}, ChunkTreeUUID: ondisk.UUID{3},
		SubvolUUID: ondisk.UUID{4}, Time: time.Unix(1700000000, 0), Label: "repro"}
	var imgs [2][]byte
	for i := range imgs {
		dev := blockdev.NewMemory(200 << 20)
		if err := Make(dev, cfg); err != nil {
			t.Fatal(err)
		}
		imgs[i] = dev.Bytes()
	}
	if !bytes.Equal(imgs[0], imgs[1]) {
		t.Fatal("two images from the same config differ")
	}
}

// TestBuildTreeRoundTrip bulk-loads random items into small nodes (several
// levels) and reads them back through diskio and ctree.
func TestBuildTreeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(testSeed(t)))
	for _, nodesize := range []uint32{4096, 16384} {
		for _, n := range []int{0, 1, 7, 300, 5000, 40000} {
			buildAndRead(t, rng, nodesize, n)
		}
	}
}

func buildAndRead(t *testing.T, rng *rand.Rand, nodesize uint32, n int) {
	const base = 1 << 20
	seen := map[ondisk.Key]bool{}
	var items []Item
	for len(items) < n {
		k := ondisk.Key{ObjectID: ondisk.ObjectID(rng.Intn(n + 1)), Type: ondisk.ItemType(rng.Intn(256)),
			Offset: rng.Uint64() % 1000}
		if seen[k] {
			continue
		}
		seen[k] = true
		size := rng.Intn(64)
		if rng.Intn(50) == 0 {
			size = rng.Intn(diskio.LeafDataSize(nodesize) - ondisk.ItemHeaderSize + 1)
		}
		d := make([]byte, size)
		rng.Read(d)
		items = append(items, Item{Key: k, Data: d})
	}
	tp := TreeParams{Owner: ondisk.FSTreeObjectID, Generation: 7, NodeSize: nodesize, FSID: ondisk.UUID{9},
		Csum: csum.XXHash}
	next := ondisk.LogicalAddr(base)
	tree, err := BuildTree(tp, items, func() (ondisk.LogicalAddr, error) {
		next += ondisk.LogicalAddr(nodesize)
		return next - ondisk.LogicalAddr(nodesize), nil
	})
	if err != nil {
		t.Fatalf("nodesize %d, %d items: %v", nodesize, n, err)
	}
	if want, _ := CountBlocks(nodesize, items); want != len(tree.Blocks) {
		t.Fatalf("CountBlocks %d, BuildTree used %d", want, len(tree.Blocks))
	}
	dev := blockdev.NewMemory(int64(next))
	for _, b := range tree.Blocks {
		dev.WriteAt(b.Data, int64(b.Addr))
	}
	cm := &volume.ChunkMap{}
	cm.Insert(base, ondisk.Chunk{Length: uint64(next - base), StripeLen: stripeLen, Type: ondisk.BlockGroupMetadata,
		Stripes: []ondisk.Stripe{{DevID: 1, Offset: base}}})
	sb := &ondisk.Superblock{NodeSize: nodesize, SectorSize: 4096, CsumType: uint16(csum.XXHash), FSID: tp.FSID}
	r := diskio.NewReader(dev, sb, cm, 1<<20)
	r.SynthItems = true // made-up items
	ct := &ctree.Tree{R: r, ID: tp.Owner, Root: tree.Root, Level: tree.Level,
		Gen: tp.Generation}
	sortedItems, _ := sortedItems(items)
	i := 0
	err = ct.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, d []byte) bool {
		if i >= len(sortedItems) || k != sortedItems[i].Key || !bytes.Equal(d, sortedItems[i].Data) {
			t.Errorf("nodesize %d: item %d: got %v, want %v", nodesize, i, k, sortedItems[min(i, len(sortedItems)-1)].Key)
			return false
		}
		i++
		return true
	})
	if err != nil || i != len(items) {
		t.Fatalf("nodesize %d, %d items: read back %d, err %v", nodesize, n, i, err)
	}
	walked := 0
	ct.Walk(func(nd *diskio.Node, err error) error {
		if err != nil {
			t.Fatalf("walk: %v", err)
		}
		walked++
		return nil
	})
	if walked != len(tree.Blocks) {
		t.Fatalf("walk saw %d blocks, built %d", walked, len(tree.Blocks))
	}
}

func TestBuildTreeRejects(t *testing.T) {
	tp := TreeParams{Owner: 5, Generation: 1, NodeSize: 4096}
	alloc := func() (ondisk.LogicalAddr, error) { return 4096, nil }
	dup := []Item{{Key: ondisk.Key{ObjectID: 1}}, {Key: ondisk.Key{ObjectID: 1}}}
	if _, err := BuildTree(tp, dup, alloc); err == nil {
		t.Error("duplicate keys accepted")
	}
	big := []Item{{Key: ondisk.Key{ObjectID: 1}, Data: make([]byte, 4096)}}
	if _, err := BuildTree(tp, big, alloc); err == nil {
		t.Error("oversized item accepted")
	}
}

// TestBuildTreeEvensLastLeaf: nine root-item-sized items in 4 KiB leaves
// fill one leaf with eight; the bulk loader splits them 5/4 instead of 8/1.
func TestBuildTreeEvensLastLeaf(t *testing.T) {
	var items []Item
	for i := 0; i < 9; i++ {
		items = append(items, Item{Key: ondisk.Key{ObjectID: ondisk.ObjectID(i + 1), Type: ondisk.RootItemKey},
			Data: make([]byte, 439)})
	}
	groups, err := packLeaves(4096, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || len(groups[0]) != 5 || len(groups[1]) != 4 {
		t.Fatalf("leaves hold %d+%d items, want 5+4", len(groups[0]), len(groups[len(groups)-1]))
	}
}
