package check

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// editor damages an image in targeted ways: it finds items with the
// filesystem reader and rewrites blocks (every copy) with or without a
// fresh checksum.
type editor struct {
	t   testing.TB
	dev *blockdev.File
	fi  *fsinfo.FSInfo
}

func openEditor(t testing.TB, img string) *editor {
	t.Helper()
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		dev.Close()
		t.Fatal(err)
	}
	e := &editor{t: t, dev: dev, fi: fi}
	t.Cleanup(func() { dev.Close() })
	return e
}

// found is an item located by find.
type found struct {
	key  ondisk.Key
	leaf ondisk.LogicalAddr
	slot int
	data []byte // a copy
}

// find returns the first item of tree for which pred holds.
func (e *editor) find(tree ondisk.ObjectID, pred func(k ondisk.Key, d []byte) bool) found {
	e.t.Helper()
	f, ok := e.tryFind(tree, pred)
	if !ok {
		e.t.Fatalf("tree %s: no item matches", ondisk.TreeName(tree))
	}
	return f
}

// tryFind is find that reports a miss instead of failing.
func (e *editor) tryFind(tree ondisk.ObjectID, pred func(k ondisk.Key, d []byte) bool) (found, bool) {
	e.t.Helper()
	return e.tryFindIn(e.tree(tree), pred)
}

// tree opens a tree of the root tree (or a global one) for find/insert.
func (e *editor) tree(id ondisk.ObjectID) *ctree.Tree {
	e.t.Helper()
	tr, err := e.fi.Tree(id)
	if err != nil {
		e.t.Fatalf("tree %s: %v", ondisk.TreeName(id), err)
	}
	return tr
}

// findIn is find in a tree given by its root (log trees).
func (e *editor) findIn(tr *ctree.Tree, pred func(k ondisk.Key, d []byte) bool) found {
	e.t.Helper()
	f, ok := e.tryFindIn(tr, pred)
	if !ok {
		e.t.Fatalf("tree %s root %d: no item matches", ondisk.TreeName(tr.ID), tr.Root)
	}
	return f
}

func (e *editor) tryFindIn(tr *ctree.Tree, pred func(k ondisk.Key, d []byte) bool) (found, bool) {
	e.t.Helper()
	tree := tr.ID
	p, ok, err := tr.SearchForward(ondisk.Key{})
	for ; ok && err == nil; ok, err = p.Next() {
		if pred(p.Key(), p.Data()) {
			return found{key: p.Key(), leaf: p.Leaf().Addr, slot: p.Slots[0], data: append([]byte(nil), p.Data()...)}, true
		}
	}
	if err != nil {
		e.t.Fatalf("walk tree %s: %v", ondisk.TreeName(tree), err)
	}
	return found{}, false
}

// readBlock returns a copy of the tree block at addr (first copy).
func (e *editor) readBlock(addr ondisk.LogicalAddr) []byte {
	e.t.Helper()
	n, err := e.fi.R.ReadNode(addr, diskioExpectAny)
	if err != nil {
		e.t.Fatalf("read block %d: %v", addr, err)
	}
	return append([]byte(nil), n.Data...)
}

// writeBlock writes b to every copy of the block at addr, with a fresh
// checksum when fixCsum is set.
func (e *editor) writeBlock(addr ondisk.LogicalAddr, b []byte, fixCsum bool) {
	e.t.Helper()
	if fixCsum {
		e.fi.Csum.SetBlock(b)
	}
	copies, _, err := e.fi.Chunks.Map(addr, uint64(len(b)))
	if err != nil {
		e.t.Fatal(err)
	}
	for _, c := range copies {
		if _, err := e.dev.WriteAt(b, int64(c.Physical)); err != nil {
			e.t.Fatal(err)
		}
	}
	e.fi.R.Invalidate(addr)
}

// editBlock rewrites the block at addr through fn.
func (e *editor) editBlock(addr ondisk.LogicalAddr, fixCsum bool, fn func(b []byte)) {
	e.t.Helper()
	b := e.readBlock(addr)
	fn(b)
	e.writeBlock(addr, b, fixCsum)
}

// editItem rewrites the data of the item f (found earlier) through fn and
// fixes the block's checksum.
func (e *editor) editItem(f found, fn func(d []byte)) {
	e.t.Helper()
	e.editBlock(f.leaf, true, func(b []byte) {
		it := ondisk.DecodeItemHeader(b, f.slot)
		if it.Key != f.key {
			e.t.Fatalf("block %d slot %d holds %v, not %v", f.leaf, f.slot, it.Key, f.key)
		}
		start := ondisk.HeaderSize + int(it.Offset)
		fn(b[start : start+int(it.Size)])
	})
}

// editSuper rewrites every superblock copy on the device through fn.
func (e *editor) editSuper(fn func(sb *ondisk.Superblock)) {
	e.t.Helper()
	for _, off := range ondisk.SuperMirrorOffsets {
		if int64(off)+ondisk.SuperInfoSize > e.dev.Size() {
			continue
		}
		buf := make([]byte, ondisk.SuperInfoSize)
		if _, err := e.dev.ReadAt(buf, int64(off)); err != nil {
			e.t.Fatal(err)
		}
		sb, err := ondisk.DecodeSuperblock(buf)
		if err != nil {
			e.t.Fatal(err)
		}
		fn(sb)
		b := sb.Encode()
		e.fi.Csum.SetBlock(b)
		if _, err := e.dev.WriteAt(b, int64(off)); err != nil {
			e.t.Fatal(err)
		}
	}
}

// diskioExpectAny reads a block without expectations.
var diskioExpectAny = diskio.Expect{Level: -1}

// Leaf layout for insertItem/deleteItem: item headers follow the block
// header; item data offsets are relative to the end of the block header
// and decrease with the slot (the tree-checker wants them packed).
const leafNritemsAt = 0x60

func itemHdrAt(slot int) int { return ondisk.HeaderSize + slot*ondisk.ItemHeaderSize }

func itemOff(b []byte, slot int) int { return int(le64.Uint32(b[itemHdrAt(slot)+17:])) }

func setItemOff(b []byte, slot, off int) { le64.PutUint32(b[itemHdrAt(slot)+17:], uint32(off)) }

// insertItem adds an item to tree right after the last item below key, in
// the same leaf (so that no key pointer changes), with a fresh checksum.
func (e *editor) insertItem(tree ondisk.ObjectID, key ondisk.Key, data []byte) {
	e.t.Helper()
	tr := e.tree(tree)
	p, ok, err := tr.SearchBackward(key)
	var leaf ondisk.LogicalAddr
	var slot int
	switch {
	case err != nil:
		e.t.Fatalf("tree %s: search %v: %v", ondisk.TreeName(tree), key, err)
	case ok && p.Key() == key:
		e.t.Fatalf("tree %s already has %v", ondisk.TreeName(tree), key)
	case ok:
		leaf, slot = p.Leaf().Addr, p.Slots[0]+1
	case tr.Level == 0: // nothing below key: the root leaf's first slot
		leaf, slot = tr.Root, 0
	default:
		e.t.Fatalf("tree %s: no item below %v in a tree of level %d", ondisk.TreeName(tree), key, tr.Level)
	}
	e.editBlock(leaf, true, func(b []byte) {
		n := int(le64.Uint32(b[leafNritemsAt:]))
		end := len(b) - ondisk.HeaderSize // data end, relative
		if slot > 0 {
			end = itemOff(b, slot-1)
		}
		low := len(b) - ondisk.HeaderSize
		if n > 0 {
			low = itemOff(b, n-1)
		}
		if free := low - n*ondisk.ItemHeaderSize; free < ondisk.ItemHeaderSize+len(data) {
			e.t.Fatalf("leaf %d has %d bytes free, %v needs %d", leaf, free, key, ondisk.ItemHeaderSize+len(data))
		}
		h := ondisk.HeaderSize
		// data of the items from slot on moves down to make room
		copy(b[h+low-len(data):], b[h+low:h+end])
		copy(b[h+end-len(data):h+end], data)
		copy(b[itemHdrAt(slot+1):itemHdrAt(n+1)], b[itemHdrAt(slot):itemHdrAt(n)])
		for i := slot + 1; i <= n; i++ {
			setItemOff(b, i, itemOff(b, i)-len(data))
		}
		hdr := b[itemHdrAt(slot):itemHdrAt(slot+1)]
		le64.PutUint64(hdr[0:], uint64(key.ObjectID))
		hdr[8] = byte(key.Type)
		le64.PutUint64(hdr[9:], key.Offset)
		setItemOff(b, slot, end-len(data))
		le64.PutUint32(hdr[21:], uint32(len(data)))
		le64.PutUint32(b[leafNritemsAt:], uint32(n+1))
	})
}

// deleteItem removes the item f (found earlier, not the first of its leaf:
// that would change the parent's key pointer) with a fresh checksum.
func (e *editor) deleteItem(f found) {
	e.t.Helper()
	if f.slot == 0 {
		e.t.Fatalf("deleteItem %v: first item of leaf %d", f.key, f.leaf)
	}
	e.editBlock(f.leaf, true, func(b []byte) {
		n := int(le64.Uint32(b[leafNritemsAt:]))
		it := ondisk.DecodeItemHeader(b, f.slot)
		if it.Key != f.key {
			e.t.Fatalf("block %d slot %d holds %v, not %v", f.leaf, f.slot, it.Key, f.key)
		}
		h, sz, low := ondisk.HeaderSize, int(it.Size), itemOff(b, n-1)
		copy(b[h+low+sz:], b[h+low:h+int(it.Offset)])
		for i := f.slot + 1; i < n; i++ {
			setItemOff(b, i, itemOff(b, i)+sz)
		}
		copy(b[itemHdrAt(f.slot):], b[itemHdrAt(f.slot+1):itemHdrAt(n)])
		le64.PutUint32(b[leafNritemsAt:], uint32(n-1))
	})
}

// delete removes the first item of tree that pred matches.
func (e *editor) delete(tree ondisk.ObjectID, pred func(k ondisk.Key, d []byte) bool) ondisk.Key {
	e.t.Helper()
	f := e.find(tree, pred)
	e.deleteItem(f)
	return f.key
}
