package diskio

import (
	"errors"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// testItem is one item of a leaf built by testLeaf.
type testItem struct {
	key  ondisk.Key
	data []byte
}

// testLeaf builds a 4 KiB leaf of owner holding items (in the order given).
func testLeaf(owner ondisk.ObjectID, items ...testItem) []byte {
	b := make([]byte, fuzzNodeSize)
	h := ondisk.Header{FSID: fuzzFSID, Bytenr: fuzzLogical, Flags: ondisk.HeaderFlagWritten,
		BackrefRev: ondisk.MixedBackrefRev, Generation: 7, Owner: owner, NumItems: uint32(len(items))}
	h.Encode(b)
	end := uint32(LeafDataSize(fuzzNodeSize))
	for i, it := range items {
		end -= uint32(len(it.data))
		ondisk.ItemHeader{Key: it.key, Offset: end, Size: uint32(len(it.data))}.Encode(b, i)
		copy(b[ondisk.HeaderSize+int(end):], it.data)
	}
	return b
}

var testRules = itemRules{sectorSize: 4096, nodeSize: fuzzNodeSize, csumSize: 4}

func key(o ondisk.ObjectID, t ondisk.ItemType, off uint64) ondisk.Key {
	return ondisk.Key{ObjectID: o, Type: t, Offset: off}
}

func inodeBytes(mode uint32, nlink uint32, flags uint64) []byte {
	x := item.InodeItem{Mode: mode, NLink: nlink, Flags: flags, Generation: 5, Transid: 5}
	return x.Bytes()
}

func dirBytes(loc ondisk.Key, ft uint8, name string, data string) []byte {
	d := item.DirItem{Location: loc, Transid: 5, Type: ft, Name: []byte(name), Data: []byte(data)}
	return d.Bytes()
}

func regExtent(bytenr, disk, off, num uint64) []byte {
	e := item.FileExtentItem{Generation: 5, RAMBytes: disk, Type: item.FileExtentReg,
		DiskBytenr: ondisk.LogicalAddr(bytenr), DiskNumBytes: disk, Offset: off, NumBytes: num}
	return e.Bytes()
}

func inlineExtent(data string) []byte {
	e := item.FileExtentItem{Generation: 5, RAMBytes: uint64(len(data)), Type: item.FileExtentInline, Inline: []byte(data)}
	return e.Bytes()
}

func dataExtentItem(refs uint64, inline ...item.InlineRef) []byte {
	e := item.ExtentItem{Refs: refs, Generation: 5, Flags: item.ExtentFlagData, Inline: inline}
	return e.Bytes()
}

func dataRef(root, ino, off uint64, count uint32) item.InlineRef {
	return item.InlineRef{Type: ondisk.ExtentDataRefKey,
		DataRef: item.ExtentDataRef{Root: ondisk.ObjectID(root), ObjectID: ondisk.ObjectID(ino), Offset: off, Count: count}}
}

func rootItemBytes(bytenr uint64, level uint8, flags uint64) []byte {
	r := item.RootItem{Bytenr: ondisk.LogicalAddr(bytenr), Level: level, Flags: flags, Generation: 5}
	return r.Bytes()
}

func bgBytes(used, chunk, flags uint64) []byte {
	b := make([]byte, 24)
	le.PutUint64(b, used)
	le.PutUint64(b[8:], chunk)
	le.PutUint64(b[16:], flags)
	return b
}

func with(b []byte, fn func([]byte)) []byte {
	c := append([]byte(nil), b...)
	fn(c)
	return c
}

// TestItemRules checks each tree-checker item rule with a leaf that passes
// and one that breaks the rule (which the reader accepted before).
func TestItemRules(t *testing.T) {
	const fs, csumT, extT, rootT = ondisk.FSTreeObjectID, ondisk.CsumTreeObjectID, ondisk.ExtentTreeObjectID, ondisk.RootTreeObjectID
	csumID := ondisk.ExtentCsumObjectID
	ino := inodeBytes(0o100644, 1, 0)
	inoItem := testItem{key(257, ondisk.InodeItemKey, 0), ino}
	cases := []struct {
		name  string
		owner ondisk.ObjectID
		items []testItem
		want  string // "" = valid
	}{
		// EXTENT_CSUM: check_csum_item
		{"csum ok", csumT, []testItem{{key(csumID, ondisk.ExtentCsumKey, 8192), make([]byte, 8)},
			{key(csumID, ondisk.ExtentCsumKey, 16384), make([]byte, 4)}}, ""},
		{"csum unaligned key", csumT, []testItem{{key(csumID, ondisk.ExtentCsumKey, 8192+512), make([]byte, 8)}}, "unaligned key offset for csum item"},
		{"csum objectid", csumT, []testItem{{key(5, ondisk.ExtentCsumKey, 8192), make([]byte, 8)}}, "csum item objectid"},
		{"csum size", csumT, []testItem{{key(csumID, ondisk.ExtentCsumKey, 8192), make([]byte, 6)}}, "not a multiple of the checksum size"},
		{"csum overlap", csumT, []testItem{{key(csumID, ondisk.ExtentCsumKey, 8192), make([]byte, 12)},
			{key(csumID, ondisk.ExtentCsumKey, 16384), make([]byte, 4)}}, "previous csum item ends"},
		// EXTENT_DATA: check_extent_data_item
		{"extent ok", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), regExtent(1<<20, 8192, 0, 8192)},
			{key(257, ondisk.ExtentDataKey, 8192), regExtent(1<<21, 4096, 0, 4096)}}, ""},
		{"inline ok", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), inlineExtent("hello")}}, ""},
		{"extent unaligned offset", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 100), regExtent(1<<20, 4096, 0, 4096)}}, "unaligned file offset"},
		{"extent unaligned bytenr", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), regExtent(1<<20+1, 4096, 0, 4096)}}, "disk_bytenr"},
		{"extent unaligned num_bytes", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), regExtent(1<<20, 4096, 0, 4000)}}, "num_bytes"},
		{"extent bad type", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), with(regExtent(1<<20, 4096, 0, 4096), func(b []byte) { b[20] = 3 })}}, "invalid file extent type"},
		{"extent bad compression", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), with(regExtent(1<<20, 4096, 0, 4096), func(b []byte) { b[16] = 4 })}}, "invalid compression"},
		{"extent encrypted", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), with(regExtent(1<<20, 4096, 0, 4096), func(b []byte) { b[17] = 1 })}}, "encryption"},
		{"extent short", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), make([]byte, 16)}}, "less than 21"},
		{"extent reg size", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), regExtent(1<<20, 4096, 0, 4096)[:40]}}, "reg/prealloc file extent item of 40 bytes"},
		{"inline not at 0", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 4096), inlineExtent("hello")}}, "inline file extent at file offset 4096"},
		{"inline ram_bytes", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), with(inlineExtent("hello"), func(b []byte) { b[8] = 9 })}}, "ram_bytes 9"},
		{"extent overlap", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 0), regExtent(1<<20, 8192, 0, 8192)},
			{key(257, ondisk.ExtentDataKey, 4096), regExtent(1<<21, 4096, 0, 4096)}}, "previous file extent ends at 8192"},
		{"extent overflow", fs, []testItem{inoItem, {key(257, ondisk.ExtentDataKey, 1<<63), regExtent(1<<20, 4096, 0, 1<<63)}}, "overflows"},
		{"extent missing inode", fs, []testItem{inoItem, {key(258, ondisk.ExtentDataKey, 0), regExtent(1<<20, 4096, 0, 4096)}}, "missing inode item"},
		// DIR_ITEM / DIR_INDEX / XATTR_ITEM: check_dir_item
		{"dir ok", fs, []testItem{{key(256, ondisk.InodeItemKey, 0), inodeBytes(0o40755, 1, 0)},
			{key(256, ondisk.DirItemKey, item.NameHash([]byte("f"))), dirBytes(key(257, ondisk.InodeItemKey, 0), item.FTRegFile, "f", "")},
			{key(256, ondisk.DirIndexKey, 2), dirBytes(key(257, ondisk.InodeItemKey, 0), item.FTRegFile, "f", "")},
			{key(256, ondisk.DirIndexKey, 3), dirBytes(key(256, ondisk.RootItemKey, ^uint64(0)), item.FTDir, "sub", "")}}, ""},
		{"dir hash", fs, []testItem{{key(256, ondisk.DirItemKey, 12345), dirBytes(key(257, ondisk.InodeItemKey, 0), item.FTRegFile, "f", "")}}, "name hash"},
		{"dir location type", fs, []testItem{{key(256, ondisk.DirIndexKey, 2), dirBytes(key(257, ondisk.ExtentDataKey, 0), item.FTRegFile, "f", "")}}, "invalid location key type"},
		{"dir location ino", fs, []testItem{{key(256, ondisk.DirIndexKey, 2), dirBytes(key(7, ondisk.InodeItemKey, 0), item.FTRegFile, "f", "")}}, "invalid inode number 7"},
		{"dir location root", fs, []testItem{{key(256, ondisk.DirIndexKey, 2), dirBytes(key(2, ondisk.RootItemKey, 0), item.FTDir, "f", "")}}, "not a subvolume"},
		{"dir file type", fs, []testItem{{key(256, ondisk.DirIndexKey, 2), dirBytes(key(257, ondisk.InodeItemKey, 0), 9, "f", "")}}, "invalid dir item type 9"},
		{"dir xattr type", fs, []testItem{{key(256, ondisk.DirIndexKey, 2), dirBytes(key(257, ondisk.InodeItemKey, 0), item.FTXattr, "f", "")}}, "dir item type 8"},
		{"dir data", fs, []testItem{{key(256, ondisk.DirIndexKey, 2), dirBytes(key(257, ondisk.InodeItemKey, 0), item.FTRegFile, "f", "x")}}, "data bytes"},
		{"dir crosses end", fs, []testItem{{key(256, ondisk.DirIndexKey, 2), dirBytes(key(257, ondisk.InodeItemKey, 0), item.FTRegFile, "file", "")[:32]}}, "crosses the item end"},
		{"xattr ok", fs, []testItem{inoItem, {key(257, ondisk.XattrItemKey, item.NameHash([]byte("user.a"))), dirBytes(ondisk.Key{}, item.FTXattr, "user.a", "v")}}, ""},
		{"xattr location", fs, []testItem{inoItem, {key(257, ondisk.XattrItemKey, item.NameHash([]byte("user.a"))), dirBytes(key(257, ondisk.InodeItemKey, 0), item.FTXattr, "user.a", "v")}}, "xattr location key"},
		{"xattr type", fs, []testItem{inoItem, {key(257, ondisk.XattrItemKey, item.NameHash([]byte("user.a"))), dirBytes(ondisk.Key{}, item.FTRegFile, "user.a", "")}}, "dir item type 1"},
		// INODE_REF: check_inode_ref
		{"inode ref ok", fs, []testItem{inoItem, {key(257, ondisk.InodeRefKey, 256), append([]byte{2, 0, 0, 0, 0, 0, 0, 0, 1, 0}, 'f')}}, ""},
		{"inode ref empty", fs, []testItem{inoItem, {key(257, ondisk.InodeRefKey, 256), []byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}, "inode ref of 10 bytes"},
		{"inode ref name", fs, []testItem{inoItem, {key(257, ondisk.InodeRefKey, 256), append([]byte{2, 0, 0, 0, 0, 0, 0, 0, 9, 0}, 'f')}}, "name crosses"},
		// INODE_ITEM: check_inode_item
		{"inode bad objectid", fs, []testItem{{key(200, ondisk.InodeItemKey, 0), ino}}, "invalid inode number 200"},
		{"inode key offset", fs, []testItem{{key(257, ondisk.InodeItemKey, 1), ino}}, "inode key offset 1"},
		{"inode size", fs, []testItem{{key(257, ondisk.InodeItemKey, 0), ino[:100]}}, "inode item of 100 bytes"},
		{"inode mode bits", fs, []testItem{{key(257, ondisk.InodeItemKey, 0), inodeBytes(0o1100644, 1, 0)}}, "unknown mode bits"},
		{"inode file type", fs, []testItem{{key(257, ondisk.InodeItemKey, 0), inodeBytes(0o644, 1, 0)}}, "invalid file type"},
		{"inode dir nlink", fs, []testItem{{key(257, ondisk.InodeItemKey, 0), inodeBytes(0o40755, 2, 0)}}, "directory with nlink 2"},
		{"inode flags", fs, []testItem{{key(257, ondisk.InodeItemKey, 0), inodeBytes(0o100644, 1, 1<<20)}}, "unknown inode flags"},
		{"inode root tree dir", rootT, []testItem{{key(ondisk.RootTreeDirObjectID, ondisk.InodeItemKey, 0), inodeBytes(0o40755, 1, 0)}}, ""},
		// ROOT_ITEM: check_root_item
		{"root ok", rootT, []testItem{{key(5, ondisk.RootItemKey, 0), rootItemBytes(1<<20, 0, 0)}}, ""},
		{"root bytenr", rootT, []testItem{{key(5, ondisk.RootItemKey, 0), rootItemBytes(1<<20+512, 0, 0)}}, "root bytenr"},
		{"root level", rootT, []testItem{{key(5, ondisk.RootItemKey, 0), rootItemBytes(1<<20, 8, 0)}}, "root level 8"},
		{"root flags", rootT, []testItem{{key(5, ondisk.RootItemKey, 0), rootItemBytes(1<<20, 0, 2)}}, "invalid root flags"},
		{"root size", rootT, []testItem{{key(5, ondisk.RootItemKey, 0), rootItemBytes(1<<20, 0, 0)[:300]}}, "root item of 300 bytes"},
		{"root id 0", rootT, []testItem{{key(0, ondisk.RootItemKey, 0), rootItemBytes(1<<20, 0, 0)}}, "root id 0"},
		// EXTENT_ITEM / METADATA_ITEM: check_extent_item
		{"extent item ok", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), dataExtentItem(2, dataRef(5, 258, 0, 1), dataRef(5, 257, 0, 1))}}, ""},
		{"extent item ref order", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), dataExtentItem(2, dataRef(5, 257, 0, 1), dataRef(5, 258, 0, 1))}}, "out of order"},
		{"extent item bytenr", extT, []testItem{{key(1<<20+1, ondisk.ExtentItemKey, 8192), dataExtentItem(1, dataRef(5, 257, 0, 1))}}, "extent bytenr"},
		{"extent item flags", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), with(dataExtentItem(1, dataRef(5, 257, 0, 1)), func(b []byte) { b[16] = 3 })}}, "exactly one of DATA and TREE_BLOCK"},
		{"extent item refs", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), dataExtentItem(1, dataRef(5, 257, 0, 2))}}, "fewer than the 2 inline"},
		{"extent item padding", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), append(dataExtentItem(1, dataRef(5, 257, 0, 1)), 0, 0, 0)}}, "crosses the item end"},
		{"extent item ref type", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), with(dataExtentItem(1, dataRef(5, 257, 0, 1)), func(b []byte) { b[24] = 99 })}}, "unknown inline ref type"},
		{"extent item ref offset", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), dataExtentItem(1, dataRef(5, 257, 100, 1))}}, "inline data ref offset 100"},
		{"extent item overlap", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 8192), dataExtentItem(1, dataRef(5, 257, 0, 1))},
			{key(1<<20+4096, ondisk.ExtentItemKey, 4096), dataExtentItem(1, dataRef(5, 258, 0, 1))}}, "overlaps"},
		{"extent item data length", extT, []testItem{{key(1<<20, ondisk.ExtentItemKey, 100), dataExtentItem(1, dataRef(5, 257, 0, 1))}}, "data extent length 100"},
		{"metadata item level", extT, []testItem{{key(1<<20, ondisk.MetadataItemKey, 9), with(dataExtentItem(1), func(b []byte) { b[16] = item.ExtentFlagTreeBlock })}}, "metadata item level 9"},
		// keyed backrefs: check_simple_keyed_refs, check_extent_data_ref
		{"shared data ref size", extT, []testItem{{key(1<<20, ondisk.SharedDataRefKey, 1<<22), make([]byte, 8)}}, "expected 4"},
		{"shared block ref parent", extT, []testItem{{key(1<<20, ondisk.SharedBlockRefKey, 1<<22+1), nil}}, "backref parent"},
		{"data ref offset", extT, []testItem{{key(1<<20, ondisk.ExtentDataRefKey, 1), with(make([]byte, 28), func(b []byte) { b[16] = 1 })}}, "extent data ref offset 1"},
		// BLOCK_GROUP_ITEM: check_block_group_item
		{"block group ok", extT, []testItem{{key(1<<20, ondisk.BlockGroupItemKey, 1<<30), bgBytes(4096, 256, ondisk.BlockGroupData|ondisk.BlockGroupDup)}}, ""},
		{"block group chunk", extT, []testItem{{key(1<<20, ondisk.BlockGroupItemKey, 1<<30), bgBytes(4096, 1, ondisk.BlockGroupData)}}, "chunk objectid 1"},
		{"block group used", extT, []testItem{{key(1<<20, ondisk.BlockGroupItemKey, 1<<30), bgBytes(1<<31, 256, ondisk.BlockGroupData)}}, "more than its size"},
		{"block group type", extT, []testItem{{key(1<<20, ondisk.BlockGroupItemKey, 1<<30), bgBytes(0, 256, ondisk.BlockGroupData|ondisk.BlockGroupSystem)}}, "invalid type"},
		{"block group profile", extT, []testItem{{key(1<<20, ondisk.BlockGroupItemKey, 1<<30), bgBytes(0, 256, ondisk.BlockGroupData|ondisk.BlockGroupDup|ondisk.BlockGroupRaid1)}}, "more than one profile"},
		// empty leaves
		{"empty fs tree", fs, nil, "never empty"},
		{"empty extent tree", extT, nil, "never empty"},
		{"empty csum tree", csumT, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &Node{Addr: fuzzLogical, Data: testLeaf(c.owner, c.items...)}
			if err := checkNode(n, fuzzFSID, Expect{Level: -1}); err != nil {
				t.Fatalf("structural check: %v", err)
			}
			err := testRules.checkItems(n)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("valid leaf refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			case c.want != "" && !errors.Is(err, ErrCorrupt):
				t.Fatalf("%v is not ErrCorrupt", err)
			}
		})
	}
}

// TestUnalignedBlockPointer: a node whose key pointer is not sector-aligned
// is refused. mirrors __btrfs_check_node
func TestUnalignedBlockPointer(t *testing.T) {
	b := fuzzInternal()
	ondisk.KeyPtr{Key: ondisk.Key{ObjectID: 900}, BlockPtr: 1<<23 + 512, Generation: 7}.Encode(b, 1)
	err := testRules.checkItems(&Node{Addr: fuzzLogical, Data: b})
	if err == nil || !strings.Contains(err.Error(), "unaligned block pointer") {
		t.Fatalf("got %v", err)
	}
}

// TestItemRulesPickOtherCopy: the csum leaf of a DUP pair whose first copy
// has a csum item at an unaligned offset (with a valid block checksum) is
// read from the second copy, with a warning; before, the reader returned
// copy 1 and writers COWed its bad key into a new block.
func TestItemRulesPickOtherCopy(t *testing.T) {
	csumID := ondisk.ExtentCsumObjectID
	good := testLeaf(ondisk.CsumTreeObjectID, testItem{key(csumID, ondisk.ExtentCsumKey, 8192), make([]byte, 8)})
	bad := testLeaf(ondisk.CsumTreeObjectID, testItem{key(csumID, ondisk.ExtentCsumKey, 8192+2048), make([]byte, 8)})
	csum.CRC32C.SetBlock(good)
	csum.CRC32C.SetBlock(bad)
	const second = fuzzPhysical + 1<<20
	dev := blockdev.NewMemory(int64(second) + fuzzNodeSize)
	dev.WriteAt(bad, int64(fuzzPhysical))
	dev.WriteAt(good, int64(second))
	cm := &volume.ChunkMap{}
	err := cm.Insert(fuzzLogical, ondisk.Chunk{Length: 1 << 20, Owner: 2, StripeLen: 65536,
		Type: ondisk.BlockGroupMetadata | ondisk.BlockGroupDup, SectorSize: 4096, NumStripes: 2, SubStripes: 1,
		Stripes: []ondisk.Stripe{{DevID: 1, Offset: fuzzPhysical}, {DevID: 1, Offset: second}}})
	if err != nil {
		t.Fatal(err)
	}
	sb := &ondisk.Superblock{NodeSize: fuzzNodeSize, SectorSize: 4096, CsumType: uint16(csum.CRC32C), FSID: fuzzFSID}
	r := NewReader(dev, sb, cm, 1<<20)
	var warnings []string
	r.Warn = func(s string) { warnings = append(warnings, s) }
	n, err := r.ReadNode(fuzzLogical, Expect{Tree: ondisk.CsumTreeObjectID, Level: 0})
	if err != nil {
		t.Fatal(err)
	}
	if k := n.Key(0); k.Offset != 8192 {
		t.Fatalf("read the bad copy: first key %v", k)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "unaligned key offset for csum item") ||
		!strings.Contains(warnings[0], "using copy 2") {
		t.Fatalf("warnings %q", warnings)
	}
	// both copies bad: a clean corruption error
	dev.WriteAt(bad, int64(second))
	r.Invalidate(fuzzLogical)
	if _, err := r.ReadNode(fuzzLogical, Expect{Tree: ondisk.CsumTreeObjectID, Level: 0}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("both copies bad: %v", err)
	}
}
