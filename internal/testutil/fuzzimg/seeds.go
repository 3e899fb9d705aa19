package fuzzimg

import (
	"bytes"
	"encoding/binary"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Seed is a named script for the seed corpus of every whole-image target.
type Seed struct {
	Name   string
	Script []byte
}

// Item is where one item of the base image is: the block (index into
// Blocks) and the used-offset (what a script's off means) of its data.
type Item struct {
	Block int
	Off   int
	Key   ondisk.Key
	Data  []byte
}

// node returns block i as a node (first copy of the base image).
func (img *Image) node(i int) *diskio.Node {
	b := img.Blocks[i]
	return &diskio.Node{Addr: b.Logical, Data: img.Bytes[b.Physical[0] : b.Physical[0]+int64(img.NodeSize)]}
}

// Items returns the items of tree for which match is true, in key order.
func (img *Image) Items(tree ondisk.ObjectID, match func(k ondisk.Key, data []byte) bool) []Item {
	var out []Item
	for i, b := range img.Blocks {
		if b.Tree != tree || b.Level != 0 {
			continue
		}
		n := img.node(i)
		for s := 0; s < n.NumItems(); s++ {
			k, d := n.Key(s), n.ItemData(s)
			if match(k, d) {
				out = append(out, Item{Block: i, Off: img.Blocks[i].usedOff(101 + int(n.Item(s).Offset)), Key: k, Data: d})
			}
		}
	}
	return out
}

// usedOff is the inverse of at: the used-offset of byte pos of the block.
func (b *Block) usedOff(pos int) int {
	off := 0
	for _, r := range b.used {
		if pos >= r[0] && pos < r[1] {
			return off + pos - r[0]
		}
		off += r[1] - r[0]
	}
	return 0
}

// dirEntries returns the DIR_ITEM and DIR_INDEX items of tree naming name.
func (img *Image) dirEntries(tree ondisk.ObjectID, name string) []Item {
	return img.Items(tree, func(k ondisk.Key, d []byte) bool {
		if k.Type != ondisk.DirItemKey && k.Type != ondisk.DirIndexKey || len(d) < 30 {
			return false
		}
		nl := int(binary.LittleEndian.Uint16(d[27:]))
		return 30+nl <= len(d) && string(d[30:30+nl]) == name
	})
}

// inodeOf returns the inode number that name (a unique name) links to in tree.
func (img *Image) inodeOf(tree ondisk.ObjectID, name string) uint64 {
	for _, it := range img.dirEntries(tree, name) {
		return binary.LittleEndian.Uint64(it.Data)
	}
	return 0
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func (img *Image) blockIndex(match func(b Block) bool) int {
	for i, b := range img.Blocks {
		if match(b) {
			return i
		}
	}
	return -1
}

// Seeds returns scripts for the damage that issue 7 names and for a few
// other shapes of hostile image; each target adds those it survives today.
func (img *Image) Seeds() []Seed {
	fs := ondisk.FSTreeObjectID
	var seeds []Seed
	add := func(name string, ops ...[]byte) { seeds = append(seeds, Seed{name, Script(0, ops...)}) }
	seeds = append(seeds, Seed{"none", nil})
	fsNode := img.blockIndex(func(b Block) bool { return b.Tree == fs && b.Level > 0 })
	fsLeaf := img.blockIndex(func(b Block) bool { return b.Tree == fs && b.Level == 0 })
	rootLeaf := img.blockIndex(func(b Block) bool { return b.Tree == ondisk.RootTreeObjectID })
	snapLeaf := img.blockIndex(func(b Block) bool { return b.Tree == 257 })
	u16 := func(i int) []byte { return []byte{byte(i), byte(i >> 8)} }
	if fsNode >= 0 {
		add("keyptr-self", Op(OpKeyPtr, uint16(fsNode), 0, u16(fsNode)...))
		add("keyptr-self-last", Op(OpKeyPtr, uint16(fsNode), uint16(img.Blocks[fsNode].NumItems-1), u16(fsNode)...))
		add("keyptr-other-tree", Op(OpKeyPtr, uint16(fsNode), 1, u16(rootLeaf)...))
		add("keyptr-duplicate-child", Op(OpKeyPtr, uint16(fsNode), 2, u16(fsLeaf)...))
		add("keyptr-first-copy", Op(OpKeyPtr|OpFirstCopy, uint16(fsNode), 0, u16(fsNode)...))
		add("level-bumped", Op(OpSet, uint16(fsNode), 0x64, 7))
	}
	if fsLeaf >= 0 {
		add("leaf-flip-raw", Op(OpXorRaw, uint16(fsLeaf), 0x200, 0x5a, 0x5a))
		add("leaf-flip-first-copy", Op(OpXorRaw|OpFirstCopy, uint16(fsLeaf), 0x200, 0x5a, 0x5a))
		add("leaf-nritems-plus-one", Op(OpAdd, uint16(fsLeaf), 0x60, 1))
		add("leaf-nritems-minus-one", Op(OpAdd, uint16(fsLeaf), 0x60, 0xff))
		add("leaf-owner-root", Op(OpSet, uint16(fsLeaf), 0x58, 1))
		add("leaf-item-offset", Op(OpAdd, uint16(fsLeaf), 101+25*3+17, 9))
		if snapLeaf >= 0 {
			add("leaf-from-snapshot", Op(OpCopy, uint16(fsLeaf), 0, u16(snapLeaf)...))
		}
		add("leaf-is-root-leaf", Op(OpCopy, uint16(fsLeaf), 0, u16(rootLeaf)...))
	}
	if b := img.blockIndex(func(b Block) bool { return b.Tree == ondisk.ExtentTreeObjectID }); b >= 0 {
		add("extent-leaf-flip", Op(OpXor, uint16(b), 0x300, 0xff, 0x01))
	}
	if b := img.blockIndex(func(b Block) bool { return b.Tree == ondisk.CsumTreeObjectID }); b >= 0 {
		add("csum-key-unaligned", Op(OpAdd, uint16(b), 101+9, 1))
		add("csum-flip", Op(OpXor, uint16(b), 0x400, 0xff))
	}
	if b := img.blockIndex(func(b Block) bool { return b.Tree == ondisk.ChunkTreeObjectID }); b >= 0 {
		add("chunk-flip", Op(OpXor, uint16(b), 0x120, 0x10))
	}
	// superblock: the root tree is the FS tree's leaf; no chunk tree
	if fsLeaf >= 0 {
		add("super-root-is-fs-leaf", Op(OpSuper, 0, 0x50-32, le64(uint64(img.Blocks[fsLeaf].Logical))...))
	}
	add("super-nodesize", Op(OpSuper, 0, 0x94-32, 0, 0x10, 0, 0))
	add("super-generation", Op(OpSuper, 0, 0x48-32, 0x7f))
	// data damage read without verification: the decompressors get garbage
	for i := 0; i < len(img.DataPages) && i < 40; i += 13 {
		seeds = append(seeds, Seed{"data-garbage", Script(1, Op(OpData, uint16(i), 100, 0xff, 0x13, 0x77, 0x01))})
	}
	seeds = append(seeds, Seed{"data-flip-verified", Script(0, Op(OpData, 3, 10, 0xff))})
	seeds = append(seeds, img.itemSeeds()...)
	return seeds
}

// coreSeeds are the seeds of the slower targets (a command or a mount
// per input): the damage issue 7 names and one of each other kind, so
// that a short fuzzing run gets past its seed corpus.
var coreSeeds = map[string]bool{
	"none": true, "keyptr-self": true, "keyptr-other-tree": true, "leaf-flip-first-copy": true,
	"leaf-nritems-plus-one": true, "csum-key-unaligned": true, "super-root-is-fs-leaf": true,
	"isize-huge-holes": true, "isize-max-zstd": true, "dirent-to-root": true, "dirent-to-self": true,
	"dirent-duplicate-name": true, "dirent-slash-name": true, "dirent-dotdot-name": true,
	"subvol-missing-root": true, "regular-is-dir": true, "dup-over-symlink-esd": true,
	"dup-over-symlink-escx": true,
}

// CoreSeeds is Seeds cut to coreSeeds, with one data-garbage seed.
func (img *Image) CoreSeeds() []Seed {
	var out []Seed
	garbage := false
	for _, s := range img.Seeds() {
		if coreSeeds[s.Name] || s.Name == "data-garbage" && !garbage {
			out = append(out, s)
			garbage = garbage || s.Name == "data-garbage"
		}
	}
	return out
}

// itemSeeds damage particular items: sizes, directory entries, links.
func (img *Image) itemSeeds() []Seed {
	fs := ondisk.FSTreeObjectID
	var seeds []Seed
	add := func(name string, ops ...[]byte) {
		if len(ops) > 0 {
			seeds = append(seeds, Seed{name, Script(0, ops...)})
		}
	}
	inodeItem := func(ino uint64) []Item {
		return img.Items(fs, func(k ondisk.Key, _ []byte) bool {
			return uint64(k.ObjectID) == ino && k.Type == ondisk.InodeItemKey
		})
	}
	// i_size at offset 16 of the inode item
	for _, name := range []string{"holes", "regular", "zstd", "inline"} {
		for _, it := range inodeItem(img.inodeOf(fs, name)) {
			add("isize-huge-"+name, Op(OpSet, uint16(it.Block), uint16(it.Off+16), le64(1<<62)...))
			add("isize-max-"+name, Op(OpSet, uint16(it.Block), uint16(it.Off+16), le64(1<<63-1)...))
		}
	}
	// nlink 0 and mode changed to a directory on a regular file
	for _, it := range inodeItem(img.inodeOf(fs, "regular")) {
		add("regular-is-dir", Op(OpXor, uint16(it.Block), uint16(it.Off+52+1), 0xc0)) // S_IFREG -> S_IFDIR
	}
	// directory entries: a cycle to the root, to itself, and duplicate names
	leafDir := img.inodeOf(fs, "d5")
	var toRoot, toSelf [][]byte
	for _, it := range img.dirEntries(fs, "leaf") {
		toRoot = append(toRoot, Op(OpSet, uint16(it.Block), uint16(it.Off), le64(256)...), Op(OpSet, uint16(it.Block), uint16(it.Off+29), 2))
		toSelf = append(toSelf, Op(OpSet, uint16(it.Block), uint16(it.Off), le64(leafDir)...), Op(OpSet, uint16(it.Block), uint16(it.Off+29), 2))
	}
	add("dirent-to-root", toRoot...)
	add("dirent-to-self", toSelf...)
	var dup [][]byte
	for _, it := range img.dirEntries(fs, "chr") {
		if it.Key.Type == ondisk.DirIndexKey {
			dup = append(dup, Op(OpSet, uint16(it.Block), uint16(it.Off+30), []byte("sym")...))
		}
	}
	add("dirent-duplicate-name", dup...)
	// restore bait: a regular file, then a directory, named as the
	// symlink before it (to DESTDIR/../victim, and to DESTDIR/..)
	for _, r := range [][2]string{{"esd", "esc"}, {"escx", "escd"}} {
		var ops [][]byte
		for _, it := range img.dirEntries(fs, r[0]) {
			if it.Key.Type == ondisk.DirIndexKey {
				ops = append(ops, Op(OpSet, uint16(it.Block), uint16(it.Off+30), []byte(r[1])...))
			}
		}
		add("dup-over-symlink-"+r[0], ops...)
	}
	var slash [][]byte
	for _, it := range img.dirEntries(fs, "fifo") {
		if it.Key.Type == ondisk.DirIndexKey {
			slash = append(slash, Op(OpSet, uint16(it.Block), uint16(it.Off+30), []byte("f/o")...))
		}
	}
	add("dirent-slash-name", slash...)
	var dot [][]byte
	for _, it := range img.dirEntries(fs, "sym") {
		if it.Key.Type == ondisk.DirIndexKey && bytes.Contains(it.Data, []byte("sym")) {
			dot = append(dot, Op(OpSet, uint16(it.Block), uint16(it.Off+30), []byte("..")...), Op(OpSet, uint16(it.Block), uint16(it.Off+27), 2))
		}
	}
	add("dirent-dotdot-name", dot...)
	// subvolume entry pointing at a missing root
	var sv [][]byte
	for _, it := range img.dirEntries(fs, "subvol") {
		sv = append(sv, Op(OpSet, uint16(it.Block), uint16(it.Off), le64(300)...))
	}
	add("subvol-missing-root", sv...)
	return seeds
}
