package mkfs

import (
	"fmt"
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Item is one key and its data: the unit BuildTree packs into leaves.
type Item struct {
	Key  ondisk.Key
	Data []byte
}

// TreeParams says how to stamp the blocks of one tree.
type TreeParams struct {
	Owner         ondisk.ObjectID
	Generation    ondisk.Generation
	NodeSize      uint32
	FSID          ondisk.UUID // metadata fsid
	ChunkTreeUUID ondisk.UUID
	Csum          csum.Type
}

// Block is one finished tree block: header, items and checksum in Data.
type Block struct {
	Addr     ondisk.LogicalAddr
	Owner    ondisk.ObjectID
	Level    int
	FirstKey ondisk.Key // zero for an empty leaf
	Data     []byte
}

// Tree is a tree BuildTree laid out: its root and every block, leaves first.
type Tree struct {
	Root   ondisk.LogicalAddr
	Level  int
	Blocks []Block
}

// Allocator hands out the logical address of the next tree block.
type Allocator func() (ondisk.LogicalAddr, error)

// BuildTree packs items into as many full leaves as they need and builds the
// internal nodes above them (a bulk load: no splits, every block written
// once). Items are sorted by key first; a duplicate key or an item too big
// for a leaf is an error. No items give one empty leaf.
func BuildTree(tp TreeParams, items []Item, alloc Allocator) (*Tree, error) {
	items, err := sortedItems(items)
	if err != nil {
		return nil, err
	}
	groups, err := packLeaves(tp.NodeSize, items)
	if err != nil {
		return nil, err
	}
	t := &Tree{}
	level := make([]Block, 0, len(groups))
	for _, g := range groups {
		b, err := newBlock(tp, alloc, 0)
		if err != nil {
			return nil, err
		}
		fillLeaf(b.Data, g)
		if len(g) > 0 {
			b.FirstKey = g[0].Key
		}
		level = append(level, b)
	}
	for lvl := 1; len(level) > 1; lvl++ {
		if lvl >= ondisk.MaxLevel {
			return nil, fmt.Errorf("build tree %s: too many levels", ondisk.TreeName(tp.Owner))
		}
		t.Blocks = append(t.Blocks, level...)
		if level, err = buildNodes(tp, alloc, level, lvl); err != nil {
			return nil, err
		}
	}
	t.Blocks = append(t.Blocks, level...)
	t.Root, t.Level = level[0].Addr, level[0].Level
	for i := range t.Blocks {
		tp.Csum.SetBlock(t.Blocks[i].Data)
	}
	return t, nil
}

// CountBlocks is how many blocks BuildTree needs for items.
func CountBlocks(nodesize uint32, items []Item) (int, error) {
	items, err := sortedItems(items)
	if err != nil {
		return 0, err
	}
	groups, err := packLeaves(nodesize, items)
	if err != nil {
		return 0, err
	}
	n, total := len(groups), len(groups)
	for per := diskio.MaxKeyPtrs(nodesize); n > 1; total += n {
		n = (n + per - 1) / per
	}
	return total, nil
}

func sortedItems(items []Item) ([]Item, error) {
	cmp := func(a, b Item) int { return a.Key.Compare(b.Key) }
	if !slices.IsSortedFunc(items, cmp) {
		items = slices.Clone(items)
		slices.SortStableFunc(items, cmp)
	}
	for i := 1; i < len(items); i++ {
		if items[i-1].Key == items[i].Key {
			return nil, fmt.Errorf("build tree: duplicate key %v", items[i].Key)
		}
	}
	return items, nil
}

// packLeaves splits items into leaves, filling each as far as it goes, then
// evens out the last two so that no leaf is left nearly empty.
func packLeaves(nodesize uint32, items []Item) ([][]Item, error) {
	room := diskio.LeafDataSize(nodesize)
	var groups [][]Item
	start, used := 0, 0
	for i, it := range items {
		need := ondisk.ItemHeaderSize + len(it.Data)
		if need > room {
			return nil, fmt.Errorf("build tree: item %v has %d bytes, a %d-byte leaf holds at most %d",
				it.Key, len(it.Data), nodesize, room-ondisk.ItemHeaderSize)
		}
		if used+need > room {
			groups = append(groups, items[start:i])
			start, used = i, 0
		}
		used += need
	}
	groups = append(groups, items[start:])
	if n := len(groups); n >= 2 {
		groups[n-2], groups[n-1] = evenOut(groups[n-2], groups[n-1])
	}
	return groups, nil
}

// evenOut moves items from the end of a (full) to the front of b while that
// makes their sizes closer.
func evenOut(a, b []Item) ([]Item, []Item) {
	size := func(it Item) int { return ondisk.ItemHeaderSize + len(it.Data) }
	sa, sb := 0, 0
	for _, it := range a {
		sa += size(it)
	}
	for _, it := range b {
		sb += size(it)
	}
	cut := len(a)
	for cut > 1 {
		m := size(a[cut-1])
		if m >= sa-sb { // moving it would not bring the two closer
			break
		}
		sa, sb, cut = sa-m, sb+m, cut-1
	}
	moved := append(slices.Clone(a[cut:]), b...)
	return a[:cut], moved
}

func newBlock(tp TreeParams, alloc Allocator, level int) (Block, error) {
	addr, err := alloc()
	if err != nil {
		return Block{}, fmt.Errorf("build tree %s: %w", ondisk.TreeName(tp.Owner), err)
	}
	b := Block{Addr: addr, Owner: tp.Owner, Level: level, Data: make([]byte, tp.NodeSize)}
	h := ondisk.Header{
		FSID: tp.FSID, Bytenr: addr, Flags: ondisk.HeaderFlagWritten, BackrefRev: ondisk.MixedBackrefRev,
		ChunkTreeUUID: tp.ChunkTreeUUID, Generation: tp.Generation, Owner: tp.Owner, Level: uint8(level),
	}
	h.Encode(b.Data)
	return b, nil
}

// fillLeaf writes items into a leaf: headers from the front, data from the back.
func fillLeaf(leaf []byte, items []Item) {
	end := len(leaf) - ondisk.HeaderSize
	for i, it := range items {
		end -= len(it.Data)
		ondisk.ItemHeader{Key: it.Key, Offset: uint32(end), Size: uint32(len(it.Data))}.Encode(leaf, i)
		copy(leaf[ondisk.HeaderSize+end:], it.Data)
	}
	setNumItems(leaf, len(items))
}

func setNumItems(b []byte, n int) {
	b[0x60], b[0x61], b[0x62], b[0x63] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
}

// buildNodes makes the level lvl nodes that point at children, as few as
// can hold them, with the pointers spread evenly.
func buildNodes(tp TreeParams, alloc Allocator, children []Block, lvl int) ([]Block, error) {
	per := diskio.MaxKeyPtrs(tp.NodeSize)
	nodes := (len(children) + per - 1) / per
	var out []Block
	for i, start := 0, 0; i < nodes; i++ {
		n := len(children) / nodes
		if i < len(children)%nodes {
			n++
		}
		group := children[start : start+n]
		start += n
		b, err := newBlock(tp, alloc, lvl)
		if err != nil {
			return nil, err
		}
		for i, c := range group {
			ondisk.KeyPtr{Key: c.FirstKey, BlockPtr: c.Addr, Generation: tp.Generation}.Encode(b.Data, i)
		}
		setNumItems(b.Data, len(group))
		b.FirstKey = group[0].FirstKey
		out = append(out, b)
	}
	return out, nil
}
