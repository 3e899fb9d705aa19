package item

import (
	"reflect"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// roundTrip checks, for any input the decoder accepts, that decoding the
// re-encoded value gives the same value back (decode(encode(x)) == x), and
// that the decoder never panics on anything.
func roundTrip[T any](t *testing.T, data []byte, decode func([]byte) (T, error), encode func(*T) []byte) {
	x, err := decode(data)
	if err != nil {
		return
	}
	b := encode(&x)
	y, err := decode(b)
	if err != nil {
		t.Fatalf("decode(encode(x)) failed: %v\nx = %+v\nencoded % x", err, x, b)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("round trip changed the value:\nx = %+v\ny = %+v", x, y)
	}
}

// fuzzItem registers the seeds of name and fuzzes the round trip.
func fuzzItem[T any](f *testing.F, name string, decode func([]byte) (T, error), encode func(*T) []byte) {
	for _, s := range seedItems()[name] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { roundTrip(t, data, decode, encode) })
}

func FuzzInodeItem(f *testing.F) {
	fuzzItem(f, "InodeItem", DecodeInodeItem, (*InodeItem).Bytes)
}

// Root items of the legacy size come back full-size (Encode always writes
// the v2 layout, as the kernel upgrades them), so V2 is compared after
// normalizing it.
func FuzzRootItem(f *testing.F) {
	for _, s := range seedItems()["RootItem"] {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, func(b []byte) (RootItem, error) {
			r, err := DecodeRootItem(b)
			r.V2 = true
			return r, err
		}, (*RootItem).Bytes)
	})
}

func FuzzInodeRef(f *testing.F) {
	fuzzItem(f, "InodeRef", DecodeInodeRefs, func(x *InodeRefs) []byte { return x.Bytes() })
}

func FuzzInodeExtref(f *testing.F) {
	fuzzItem(f, "InodeExtref", DecodeInodeExtrefs, func(x *InodeExtrefs) []byte { return x.Bytes() })
}

func FuzzDirItem(f *testing.F) {
	fuzzItem(f, "DirItem", DecodeDirItems, func(x *DirItems) []byte { return x.Bytes() })
}

func FuzzFileExtentItem(f *testing.F) {
	fuzzItem(f, "FileExtentItem", DecodeFileExtentItem, (*FileExtentItem).Bytes)
}

func FuzzExtentCsum(f *testing.F) {
	fuzzItem(f, "ExtentCsum", DecodeExtentCsum, (*ExtentCsum).Bytes)
}

func FuzzRootRef(f *testing.F) {
	fuzzItem(f, "RootRef", DecodeRootRef, (*RootRef).Bytes)
}

func FuzzExtentItem(f *testing.F) {
	fuzzItem(f, "ExtentItem", DecodeExtentItem, (*ExtentItem).Bytes)
}

func FuzzMetadataItem(f *testing.F) {
	fuzzItem(f, "MetadataItem", DecodeMetadataItem, (*MetadataItem).Bytes)
}

func FuzzTreeBlockRef(f *testing.F) {
	fuzzItem(f, "TreeBlockRef", DecodeTreeBlockRef, func(x *TreeBlockRef) []byte { return x.Bytes() })
}

func FuzzSharedBlockRef(f *testing.F) {
	fuzzItem(f, "SharedBlockRef", DecodeSharedBlockRef, func(x *SharedBlockRef) []byte { return x.Bytes() })
}

func FuzzExtentDataRef(f *testing.F) {
	fuzzItem(f, "ExtentDataRef", DecodeExtentDataRef, (*ExtentDataRef).Bytes)
}

func FuzzSharedDataRef(f *testing.F) {
	fuzzItem(f, "SharedDataRef", DecodeSharedDataRef, (*SharedDataRef).Bytes)
}

func FuzzBlockGroupItem(f *testing.F) {
	fuzzItem(f, "BlockGroupItem", DecodeBlockGroupItem, (*BlockGroupItem).Bytes)
}

func FuzzFreeSpaceInfo(f *testing.F) {
	fuzzItem(f, "FreeSpaceInfo", DecodeFreeSpaceInfo, (*FreeSpaceInfo).Bytes)
}

func FuzzFreeSpaceBitmap(f *testing.F) {
	fuzzItem(f, "FreeSpaceBitmap", DecodeFreeSpaceBitmap, (*FreeSpaceBitmap).Bytes)
}

func FuzzFreeSpaceHeader(f *testing.F) {
	fuzzItem(f, "FreeSpaceHeader", DecodeFreeSpaceHeader, (*FreeSpaceHeader).Bytes)
}

func FuzzDevExtent(f *testing.F) {
	fuzzItem(f, "DevExtent", DecodeDevExtent, (*DevExtent).Bytes)
}

func FuzzDevItem(f *testing.F) {
	fuzzItem(f, "DevItem", DecodeDevItem, DevItemBytes)
}

func FuzzChunkItem(f *testing.F) {
	fuzzItem(f, "ChunkItem", DecodeChunkItem, ChunkItemBytes)
}

func FuzzQgroupStatus(f *testing.F) {
	fuzzItem(f, "QgroupStatus", DecodeQgroupStatus, (*QgroupStatus).Bytes)
}

func FuzzQgroupInfo(f *testing.F) {
	fuzzItem(f, "QgroupInfo", DecodeQgroupInfo, (*QgroupInfo).Bytes)
}

func FuzzQgroupLimit(f *testing.F) {
	fuzzItem(f, "QgroupLimit", DecodeQgroupLimit, (*QgroupLimit).Bytes)
}

func FuzzQgroupRelation(f *testing.F) {
	fuzzItem(f, "QgroupRelation", DecodeQgroupRelation, func(x *QgroupRelation) []byte { return x.Bytes() })
}

func FuzzUUIDItem(f *testing.F) {
	fuzzItem(f, "UUIDItem", DecodeUUIDItem, (*UUIDItem).Bytes)
}

func FuzzDevStats(f *testing.F) {
	fuzzItem(f, "DevStats", DecodeDevStats, (*DevStats).Bytes)
}

func FuzzDevReplace(f *testing.F) {
	fuzzItem(f, "DevReplace", DecodeDevReplace, (*DevReplace).Bytes)
}

func FuzzBalanceItem(f *testing.F) {
	fuzzItem(f, "BalanceItem", DecodeBalanceItem, (*BalanceItem).Bytes)
}

func FuzzOrphanItem(f *testing.F) {
	fuzzItem(f, "OrphanItem", DecodeOrphanItem, func(x *OrphanItem) []byte { return x.Bytes() })
}

func FuzzDirLogItem(f *testing.F) {
	fuzzItem(f, "DirLogItem", DecodeDirLogItem, (*DirLogItem).Bytes)
}

func FuzzStringItem(f *testing.F) {
	fuzzItem(f, "StringItem", DecodeStringItem, (*StringItem).Bytes)
}

func FuzzVerityDesc(f *testing.F) {
	fuzzItem(f, "VerityDesc", DecodeVerityDesc, (*VerityDesc).Bytes)
}

func FuzzVerityData(f *testing.F) {
	fuzzItem(f, "VerityData", DecodeVerityData, (*VerityData).Bytes)
}

// seedItems returns encoded examples of every item type, keyed by the name
// used in the Fuzz function (testdata/fuzz/FuzzNAME holds the same seeds,
// written by TestWriteSeedCorpus).
func seedItems() map[string][][]byte {
	ts := Timespec{1700000000, 123456789}
	ino := InodeItem{Generation: 7, Transid: 8, Size: 4097, NBytes: 8192, NLink: 2, UID: 1000, GID: 100,
		Mode: 0o100644, Flags: InodeNoDataCow | InodeNoDataSum, Sequence: 3, Atime: ts, Ctime: ts, Mtime: ts, Otime: ts}
	root := RootItem{Inode: InodeItem{Generation: 1, NLink: 1, Mode: 0o40755, Flags: InodeRootItemInit},
		Generation: 9, RootDirID: 256, Bytenr: 30441472, BytesUsed: 16384, Refs: 1, Level: 1,
		GenerationV2: 9, UUID: ondisk.UUID{1, 2, 3}, Otransid: 5, Ctime: ts, Otime: ts}
	rootV1 := root.Bytes()[:RootItemSizeV1]
	key := ondisk.Key{ObjectID: 257, Type: ondisk.InodeItemKey}
	chunk := ondisk.Chunk{Length: 8 << 20, Owner: 2, StripeLen: 65536, Type: ondisk.BlockGroupMetadata | ondisk.BlockGroupDup,
		IOAlign: 65536, IOWidth: 65536, SectorSize: 4096, NumStripes: 2, SubStripes: 1,
		Stripes: []ondisk.Stripe{{DevID: 1, Offset: 1 << 20, DevUUID: ondisk.UUID{9}}, {DevID: 1, Offset: 9 << 20, DevUUID: ondisk.UUID{9}}}}
	dev := ondisk.DevItem{DevID: 1, TotalBytes: 1 << 30, BytesUsed: 1 << 28, IOAlign: 4096, IOWidth: 4096,
		SectorSize: 4096, UUID: ondisk.UUID{7}, FSID: ondisk.UUID{8}}
	edr := ExtentDataRef{Root: 5, ObjectID: 257, Offset: 0, Count: 1}
	inl := []InlineRef{{Type: ondisk.ExtentDataRefKey, DataRef: edr},
		{Type: ondisk.SharedDataRefKey, Offset: 30425088, Count: 2}}
	tinl := []InlineRef{{Type: ondisk.TreeBlockRefKey, Offset: 5}, {Type: ondisk.SharedBlockRefKey, Offset: 30441472},
		{Type: ondisk.ExtentOwnerRefKey, Offset: 256}}
	bal := BalanceItem{Flags: 7, Data: BalanceArgs{Profiles: 1, Usage: 50, Flags: 2, Limit: 3<<32 | 1},
		Meta: BalanceArgs{Target: ondisk.BlockGroupDup, StripesMin: 1, StripesMax: 2}}

	b := func(x interface{ Bytes() []byte }) []byte { return x.Bytes() }
	return map[string][][]byte{
		"InodeItem": {b(&ino), make([]byte, InodeItemSize)},
		"RootItem":  {b(&root), rootV1},
		"InodeRef": {b(InodeRefs{{Index: 2, Name: []byte("file")}}),
			b(InodeRefs{{Index: 3, Name: []byte("a")}, {Index: 4, Name: []byte("hardlink")}})},
		"InodeExtref": {b(InodeExtrefs{{Parent: 256, Index: 77, Name: []byte("extended")}})},
		"DirItem": {b(DirItems{{Location: key, Transid: 7, Type: FTRegFile, Name: []byte("name")}}),
			b(DirItems{{Location: ondisk.Key{}, Transid: 8, Type: FTXattr, Name: []byte("user.x"), Data: []byte("value")},
				{Type: FTXattr, Name: []byte("user.y")}})},
		"FileExtentItem": {
			b(&FileExtentItem{Generation: 7, RAMBytes: 5, Type: FileExtentInline, Inline: []byte("hello")}),
			b(&FileExtentItem{Generation: 7, RAMBytes: 131072, Type: FileExtentReg, Compression: CompressZstd,
				DiskBytenr: 13631488, DiskNumBytes: 4096, NumBytes: 131072}),
			b(&FileExtentItem{Generation: 8, RAMBytes: 1 << 20, Type: FileExtentPrealloc, DiskBytenr: 1 << 24,
				DiskNumBytes: 1 << 20, Offset: 4096, NumBytes: 8192})},
		"ExtentCsum":      {{1, 2, 3, 4, 5, 6, 7, 8}},
		"RootRef":         {b(&RootRef{DirID: 256, Sequence: 2, Name: []byte("subvol")})},
		"ExtentItem":      {b(&ExtentItem{Refs: 2, Generation: 7, Flags: ExtentFlagData, Inline: inl}), b(&ExtentItem{Refs: 1, Generation: 7, Flags: ExtentFlagTreeBlock, TreeBlock: TreeBlockInfo{key, 1}, Inline: tinl[:1]})},
		"MetadataItem":    {b(&MetadataItem{Refs: 3, Generation: 9, Flags: ExtentFlagTreeBlock | BlockFlagFullBackref, Inline: tinl})},
		"TreeBlockRef":    {{}},
		"SharedBlockRef":  {{}},
		"ExtentDataRef":   {b(&edr)},
		"SharedDataRef":   {b(&SharedDataRef{Count: 3})},
		"BlockGroupItem":  {b(&BlockGroupItem{Used: 16384, ChunkObjectID: 256, Flags: ondisk.BlockGroupSystem | ondisk.BlockGroupDup})},
		"FreeSpaceInfo":   {b(&FreeSpaceInfo{ExtentCount: 4, Flags: FreeSpaceUsingBitmaps})},
		"FreeSpaceBitmap": {{0xff, 0x0f, 0, 0x80}},
		"FreeSpaceHeader": {b(&FreeSpaceHeader{Location: ondisk.Key{ObjectID: 300, Type: ondisk.InodeItemKey},
			Generation: 5, NumEntries: 10, NumBitmaps: 1})},
		"DevExtent": {b(&DevExtent{ChunkTree: 3, ChunkObjectID: 256, ChunkOffset: 22020096, Length: 8 << 20,
			ChunkTreeUUID: ondisk.UUID{4}})},
		"DevItem":        {DevItemBytes(&dev)},
		"ChunkItem":      {ChunkItemBytes(&chunk)},
		"QgroupStatus":   {b(&QgroupStatus{Version: 1, Generation: 9, Flags: QgroupStatusFlagOn}), b(&QgroupStatus{Version: 1, Flags: 9, EnableGen: 4, HasEnableGen: true})},
		"QgroupInfo":     {b(&QgroupInfo{Generation: 9, Referenced: 16384, ReferencedCompressed: 16384, Exclusive: 16384, ExclusiveCompressed: 16384})},
		"QgroupLimit":    {b(&QgroupLimit{Flags: QgroupLimitMaxRfer, MaxReferenced: 100 << 20})},
		"QgroupRelation": {{}},
		"UUIDItem":       {b(&UUIDItem{SubvolIDs: []uint64{256, 257}})},
		"DevStats":       {b(&DevStats{Values: []uint64{0, 1, 2, 3, 4}})},
		"DevReplace":     {b(&DevReplace{SrcDevID: 1, ReplaceState: DevReplaceFinished, TimeStarted: 1700000000})},
		"BalanceItem":    {b(&bal)},
		"OrphanItem":     {{}},
		"DirLogItem":     {b(&DirLogItem{End: ^uint64(0)})},
		"StringItem":     {[]byte("hello")},
		"VerityDesc":     {b(&VerityDesc{Size: 256})},
		"VerityData":     {{1, 2, 3}},
	}
}
