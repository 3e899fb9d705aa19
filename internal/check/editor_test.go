package check

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
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
	tr, err := e.fi.Tree(tree)
	if err != nil {
		e.t.Fatalf("tree %s: %v", ondisk.TreeName(tree), err)
	}
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
