package treelog

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// testLeaf builds a 16 KiB leaf holding an inode item, a ref, an xattr and
// file extents of inode ino, then items of inode ino+1.
func testLeaf(ino ondisk.ObjectID) *diskio.Node {
	n := &diskio.Node{Addr: 1 << 20, Data: make([]byte, 16384)}
	end := len(n.Data) - ondisk.HeaderSize
	nr := 0
	add := func(k ondisk.Key, d []byte) {
		end -= len(d)
		copy(n.Data[ondisk.HeaderSize+end:], d)
		ondisk.ItemHeader{Key: k, Offset: uint32(end), Size: uint32(len(d))}.Encode(n.Data, nr)
		nr++
	}
	ii := item.InodeItem{Generation: 5, Transid: 9, Size: 3 << 12, NLink: 1, Mode: 0o100644}
	add(ondisk.Key{ObjectID: ino, Type: ondisk.InodeItemKey}, ii.Bytes())
	add(ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey, Offset: 256}, make([]byte, 11))
	add(ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey, Offset: 77}, make([]byte, 40))
	for i := uint64(0); i < 3; i += 2 { // extents at 0 and 8 KiB: a hole between
		fe := item.FileExtentItem{Generation: 9, RAMBytes: 4096, Type: item.FileExtentReg,
			DiskBytenr: ondisk.LogicalAddr(1<<30 + i<<12), DiskNumBytes: 4096, NumBytes: 4096}
		add(ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: i << 12}, fe.Bytes())
	}
	add(ondisk.Key{ObjectID: ino + 1, Type: ondisk.InodeItemKey}, ii.Bytes())
	hd := ondisk.Header{Bytenr: n.Addr, Generation: 9, Owner: ondisk.FSTreeObjectID, NumItems: uint32(nr)}
	hd.Encode(n.Data)
	return n
}

// TestCopyLeafItemsAllocs: seed 000's property. Copying an inode's items
// out of a (locked) subvolume leaf goes through the per-log scratch leaf
// prepared beforehand and the inode's reused store: after the first copy
// it allocates nothing.
func TestCopyLeafItemsAllocs(t *testing.T) {
	leaf := testLeaf(257)
	var s scratch
	s.prepare(len(leaf.Data)) // before any lock, as Writer.Fsync does
	l := &inodeLog{id: ondisk.InodeRef{Root: 5, Ino: 257}, mode: modeAll}
	cur := extentCursor{noHoles: true, ss: 4096, transid: 9}
	copyOnce := func() {
		l.reset()
		cur.reset()
		if more := s.copyLeafItems(leaf, 0, l, &cur); more {
			t.Fatal("copy did not stop at the next inode")
		}
		cur.finish(l)
	}
	copyOnce() // warm-up: the store grows to this inode's size once
	if got := len(l.items); got != 6 {
		t.Fatalf("copied %d items, want 6 (inode, ref, xattr, extent, hole, extent)", got)
	}
	if len(cur.news) != 2 {
		t.Fatalf("new data extents %d, want 2", len(cur.news))
	}
	if a := testing.AllocsPerRun(200, copyOnce); a != 0 {
		t.Fatalf("copy path allocates %.1f times per fsync after warm-up, want 0", a)
	}
}

// BenchmarkCopyLeafItems measures the copy path (clone + item copy).
func BenchmarkCopyLeafItems(b *testing.B) {
	leaf := testLeaf(257)
	var s scratch
	s.prepare(len(leaf.Data))
	l := &inodeLog{id: ondisk.InodeRef{Root: 5, Ino: 257}, mode: modeAll}
	cur := extentCursor{noHoles: true, ss: 4096, transid: 9}
	b.ReportAllocs()
	for b.Loop() {
		l.reset()
		cur.reset()
		s.copyLeafItems(leaf, 0, l, &cur)
	}
}
