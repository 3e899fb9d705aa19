package check

import (
	"fmt"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// backref is one back reference an extent item declares (inline or as a
// keyed item), with the number of matching references the walk found. A
// reference found without a declared backref is added with count 0.
type backref struct {
	typ   ondisk.ItemType // TREE_BLOCK_REF, SHARED_BLOCK_REF, EXTENT_DATA_REF, SHARED_DATA_REF
	root  uint64          // root (TREE_BLOCK_REF, EXTENT_DATA_REF) or parent block (SHARED_*)
	ino   uint64          // EXTENT_DATA_REF objectid
	off   uint64          // EXTENT_DATA_REF offset
	count uint32          // references declared
	found uint32          // references found
}

func (b *backref) String() string {
	switch b.typ {
	case ondisk.TreeBlockRefKey:
		return fmt.Sprintf("TREE_BLOCK_REF root %s", ondisk.TreeName(ondisk.ObjectID(b.root)))
	case ondisk.SharedBlockRefKey:
		return fmt.Sprintf("SHARED_BLOCK_REF parent %d", b.root)
	case ondisk.ExtentDataRefKey:
		return fmt.Sprintf("EXTENT_DATA_REF root %s ino %d offset %d", ondisk.TreeName(ondisk.ObjectID(b.root)), b.ino, b.off)
	case ondisk.SharedDataRefKey:
		return fmt.Sprintf("SHARED_DATA_REF parent %d", b.root)
	}
	return fmt.Sprintf("%s %d", b.typ, b.root)
}

type backrefID struct {
	typ            ondisk.ItemType
	root, ino, off uint64
}

// extentRec is an EXTENT_ITEM or METADATA_ITEM with its backrefs.
type extentRec struct {
	start, length uint64
	key           ondisk.Key
	leaf          ondisk.LogicalAddr // leaf holding the item
	refs          uint64
	gen           uint64
	flags         uint64
	level         uint8 // tree blocks: from the key or the tree_block_info
	metadata      bool  // a tree block
	broken        bool  // undecodable: references to it are not matched
	found         uint64
	backrefs      []backref
	index         map[backrefID]int // built once there are many backrefs
}

func (e *extentRec) end() uint64 { return e.start + e.length }

// match returns the backref with this identity, or nil.
func (e *extentRec) match(typ ondisk.ItemType, root, ino, off uint64) *backref {
	if e.index != nil {
		if i, ok := e.index[backrefID{typ, root, ino, off}]; ok {
			return &e.backrefs[i]
		}
		return nil
	}
	for i := range e.backrefs {
		b := &e.backrefs[i]
		if b.typ == typ && b.root == root && b.ino == ino && b.off == off {
			return b
		}
	}
	return nil
}

// addBackref appends a backref and returns it.
func (e *extentRec) addBackref(b backref) *backref {
	e.backrefs = append(e.backrefs, b)
	i := len(e.backrefs) - 1
	if e.index == nil && len(e.backrefs) > 16 {
		e.index = make(map[backrefID]int, len(e.backrefs))
		for j := range e.backrefs {
			x := &e.backrefs[j]
			e.index[backrefID{x.typ, x.root, x.ino, x.off}] = j
		}
	} else if e.index != nil {
		e.index[backrefID{b.typ, b.root, b.ino, b.off}] = i
	}
	return &e.backrefs[i]
}

// extentTable holds the extent items by start.
type extentTable struct {
	recs []extentRec
}

// find returns the index of the extent starting at start, or -1.
func (t *extentTable) find(start uint64) int {
	i := sort.Search(len(t.recs), func(i int) bool { return t.recs[i].start >= start })
	if i < len(t.recs) && t.recs[i].start == start {
		return i
	}
	return -1
}

// containing returns the index of the extent covering b, or -1.
func (t *extentTable) containing(b uint64) int {
	i := sort.Search(len(t.recs), func(i int) bool { return t.recs[i].start > b }) - 1
	if i >= 0 && b < t.recs[i].end() {
		return i
	}
	return -1
}

// walkExtentTree reads every extent item and keyed backref.
func (c *checker) walkExtentTree() {
	ri, err := c.lookupRoot(ondisk.ExtentTreeObjectID)
	if err != nil {
		c.problem(ClassTree, ondisk.ExtentTreeObjectID, 0, nil, "extent tree root item: %v", err)
		return
	}
	inBG := c.fi.BlockGroupTreeID() == ondisk.ExtentTreeObjectID
	w := c.newWalker(ri, kindExtent, func(n *diskio.Node, fresh bool) {
		for i := 0; i < n.NumItems(); i++ {
			c.extentItem(n, i, inBG)
		}
	})
	w.run()
	c.finishExtentTable()
}

// finishExtentTable sorts the table if the tree's order was broken and
// drops duplicate starts.
func (c *checker) finishExtentTable() {
	recs := c.ext.recs
	if !sort.SliceIsSorted(recs, func(i, j int) bool { return recs[i].start < recs[j].start }) {
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].start < recs[j].start })
	}
	out := recs[:0]
	for i := range recs {
		if len(out) > 0 && out[len(out)-1].start == recs[i].start {
			e := &recs[i]
			c.problem(ClassExtent, ondisk.ExtentTreeObjectID, e.leaf, keyp(e.key), "second extent item for bytenr %d (first is %v)",
				e.start, out[len(out)-1].key)
			continue
		}
		out = append(out, recs[i])
	}
	c.ext.recs = out
}

// extentItem handles slot i of an extent tree leaf.
func (c *checker) extentItem(n *diskio.Node, i int, inBG bool) {
	k := n.Key(i)
	d := n.ItemData(i)
	switch k.Type {
	case ondisk.ExtentItemKey, ondisk.MetadataItemKey:
		c.extentRecItem(n, k, d)
	case ondisk.TreeBlockRefKey, ondisk.SharedBlockRefKey, ondisk.ExtentDataRefKey, ondisk.SharedDataRefKey:
		c.keyedBackref(n, k, d)
	case ondisk.BlockGroupItemKey:
		if inBG {
			c.blockGroupItem(ondisk.ExtentTreeObjectID, n, k, d)
		}
	case ondisk.ExtentRefV0Key:
		c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), "obsolete EXTENT_REF_V0 item (not supported since kernel 4.x)")
	default:
		c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), "unexpected %s item in the extent tree", k.Type)
	}
}

// extentRecItem decodes an EXTENT_ITEM or METADATA_ITEM with its inline refs.
// mirrors process_extent_item
func (c *checker) extentRecItem(n *diskio.Node, k ondisk.Key, d []byte) {
	bad := func(format string, args ...any) {
		c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), format, args...)
	}
	e := extentRec{start: uint64(k.ObjectID), key: k, leaf: n.Addr, length: k.Offset}
	if k.Type == ondisk.MetadataItemKey {
		e.length = c.nodesize
		e.metadata = true
		e.level = uint8(min(k.Offset, 255))
		if k.Offset >= ondisk.MaxLevel {
			bad("METADATA_ITEM level %d out of range", k.Offset)
		}
	}
	defer func() { c.ext.recs = append(c.ext.recs, e) }()
	if e.start%c.sectorsize != 0 {
		bad("extent start %d not aligned to sectorsize %d", e.start, c.sectorsize)
	}
	if e.length == 0 {
		bad("extent of zero length")
		e.broken = true
		return
	}
	if len(d) < item.ExtentItemSize {
		bad("extent item of %d bytes, need %d", len(d), item.ExtentItemSize)
		e.broken = true
		return
	}
	e.refs, e.gen, e.flags = le.Uint64(d[0:]), le.Uint64(d[8:]), le.Uint64(d[16:])
	p := item.ExtentItemSize
	switch {
	case e.flags&item.ExtentFlagTreeBlock != 0 && e.flags&item.ExtentFlagData != 0:
		bad("extent flags %#x say both data and tree block", e.flags)
	case e.flags&item.ExtentFlagTreeBlock != 0:
		if !e.metadata && k.Type == ondisk.ExtentItemKey {
			e.metadata = true
			if len(d) < p+item.TreeBlockInfoSize {
				bad("tree block extent item of %d bytes has no tree_block_info", len(d))
				e.broken = true
				return
			}
			e.level = d[p+ondisk.KeySize]
			p += item.TreeBlockInfoSize
			if e.level >= ondisk.MaxLevel {
				bad("tree_block_info level %d out of range", e.level)
			}
		}
		if e.length != c.nodesize {
			bad("tree block extent of %d bytes, nodesize is %d", e.length, c.nodesize)
		}
	case e.flags&item.ExtentFlagData != 0:
		if e.metadata {
			bad("METADATA_ITEM with the data flag (flags %#x)", e.flags)
		}
		if e.length%c.sectorsize != 0 {
			bad("data extent length %d not aligned to sectorsize %d", e.length, c.sectorsize)
		}
	default:
		bad("extent flags %#x say neither data nor tree block", e.flags)
	}
	if e.flags&item.BlockFlagFullBackref != 0 && !e.metadata {
		bad("FULL_BACKREF flag on a data extent")
	}
	for p < len(d) {
		r, size, err := item.DecodeInlineRef(d[p:])
		if err != nil {
			bad("inline ref at byte %d: %v", p, err)
			e.broken = true
			return
		}
		p += size
		c.declare(&e, r.Type, r, n, k)
	}
}

// declare adds a backref an extent item or keyed item declares.
func (c *checker) declare(e *extentRec, t ondisk.ItemType, r item.InlineRef, n *diskio.Node, k ondisk.Key) {
	b := backref{typ: t, count: 1}
	switch t {
	case ondisk.TreeBlockRefKey, ondisk.SharedBlockRefKey:
		b.root = r.Offset
		if !e.metadata {
			c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), "data extent %d has a tree block backref %s", e.start, b.String())
		}
	case ondisk.ExtentDataRefKey:
		b.root, b.ino, b.off, b.count = uint64(r.DataRef.Root), uint64(r.DataRef.ObjectID), r.DataRef.Offset, r.DataRef.Count
	case ondisk.SharedDataRefKey:
		b.root, b.count = r.Offset, r.Count
	case ondisk.ExtentOwnerRefKey:
		return // simple quota owner: not a reference
	}
	if t == ondisk.ExtentDataRefKey || t == ondisk.SharedDataRefKey {
		if e.metadata {
			c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), "tree block %d has a data backref %s", e.start, b.String())
		}
		if b.count == 0 {
			c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), "%s with count 0", b.String())
		}
	}
	if old := e.match(b.typ, b.root, b.ino, b.off); old != nil {
		c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), "extent %d declares %s twice", e.start, b.String())
		old.count += b.count
		return
	}
	e.addBackref(b)
}

// keyedBackref attaches a TREE_BLOCK_REF, SHARED_BLOCK_REF,
// EXTENT_DATA_REF or SHARED_DATA_REF item to its extent item, which
// precedes it in key order.
func (c *checker) keyedBackref(n *diskio.Node, k ondisk.Key, d []byte) {
	bad := func(format string, args ...any) {
		c.problem(ClassExtent, ondisk.ExtentTreeObjectID, n.Addr, keyp(k), format, args...)
	}
	recs := c.ext.recs
	if len(recs) == 0 || recs[len(recs)-1].start != uint64(k.ObjectID) {
		bad("%s item without an extent item for bytenr %d", k.Type, k.ObjectID)
		return
	}
	e := &recs[len(recs)-1]
	if e.broken {
		return
	}
	r := item.InlineRef{Type: k.Type, Offset: k.Offset}
	switch k.Type {
	case ondisk.ExtentDataRefKey:
		ref, err := item.DecodeExtentDataRef(d)
		if err != nil {
			bad("%v", err)
			return
		}
		if h := ref.Hash(); h != k.Offset {
			bad("EXTENT_DATA_REF key offset is not the hash %d of root %d ino %d offset %d", h, ref.Root, ref.ObjectID, ref.Offset)
		}
		r.DataRef = ref
	case ondisk.SharedDataRefKey:
		ref, err := item.DecodeSharedDataRef(d)
		if err != nil {
			bad("%v", err)
			return
		}
		r.Count = ref.Count
	}
	c.declare(e, k.Type, r, n, k)
}
