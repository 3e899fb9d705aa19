package ctree_test

import (
	"encoding/binary"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ctree/ctreetest"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Hand-built trees put the write path in states random operations rarely
// reach: lopsided siblings, nodes with a single child.

type builder struct {
	t    *testing.T
	h    *harness
	next uint64
}

// leaf makes a leaf of n fresh keys with 8-byte items.
func (b *builder) leaf(n int) *diskio.Node {
	nd, err := b.h.a.NewBlock(testTree, 0)
	if err != nil {
		b.t.Fatal(err)
	}
	off := len(nd.Data) - ondisk.HeaderSize
	for i := 0; i < n; i++ {
		b.next++
		k := ondisk.Key{ObjectID: 256, Type: 1, Offset: b.next * 10}
		off -= 8
		ondisk.ItemHeader{Key: k, Offset: uint32(off), Size: 8}.Encode(nd.Data, i)
		d := nd.Data[ondisk.HeaderSize+off : ondisk.HeaderSize+off+8]
		binary.LittleEndian.PutUint64(d, b.next)
		b.h.set(k, append([]byte(nil), d...))
	}
	binary.LittleEndian.PutUint32(nd.Data[0x60:], uint32(n))
	return nd
}

// node makes an internal node over children.
func (b *builder) node(children ...*diskio.Node) *diskio.Node {
	nd, err := b.h.a.NewBlock(testTree, children[0].Level()+1)
	if err != nil {
		b.t.Fatal(err)
	}
	for i, c := range children {
		ondisk.KeyPtr{Key: c.Key(0), BlockPtr: c.Addr, Generation: c.Generation()}.Encode(nd.Data, i)
	}
	binary.LittleEndian.PutUint32(nd.Data[0x60:], uint32(len(children)))
	return nd
}

// leaves makes n one-item leaves under a level-1 node.
func (b *builder) leaves(n int) *diskio.Node {
	var cs []*diskio.Node
	for i := 0; i < n; i++ {
		cs = append(cs, b.leaf(1))
	}
	return b.node(cs...)
}

// tree commits the blocks and makes root the root of the harness's tree.
func (b *builder) tree(root *diskio.Node) {
	b.h.tr = &ctree.Tree{R: b.h.a.Reader, ID: testTree, Root: root.Addr, Level: root.Level(), Gen: root.Generation()}
	for addr, blk := range b.h.a.Live() {
		if blk.Node.Addr != root.Addr && !b.reachable(root, addr) {
			if err := b.h.a.FreeBlock(testTree, blk.Node); err != nil {
				b.t.Fatal(err)
			}
		}
	}
	if err := b.h.a.Commit(); err != nil {
		b.t.Fatal(err)
	}
	b.h.check()
}

func (b *builder) reachable(n *diskio.Node, addr ondisk.LogicalAddr) bool {
	if n.Addr == addr {
		return true
	}
	if n.IsLeaf() {
		return false
	}
	for i := 0; i < n.NumItems(); i++ {
		if c := b.h.a.Live()[n.KeyPtr(i).BlockPtr]; c != nil && b.reachable(c.Node, addr) {
			return true
		}
	}
	return false
}

func newBuilder(t *testing.T) *builder {
	return &builder{t: t, h: newHarness(t, 4096, 1)}
}

// deleteFirst deletes the first n items of p's leaf through p (and from
// the model), then checks the tree.
func (b *builder) deleteFirst(p *ctree.Path, n int) {
	b.t.Helper()
	for i := 0; i < n; i++ {
		b.h.del(p.Leaf().Key(i))
	}
	if err := p.DeleteSlots(b.h.a, 0, n); err != nil {
		b.t.Fatal(err)
	}
	b.h.check()
}

// deleteFirstUnder deletes the first item below n with DeleteItem (and
// from the model), then checks the tree.
func (b *builder) deleteFirstUnder(n *diskio.Node) {
	b.t.Helper()
	k := firstKeyUnder(n, b.h.a)
	if err := b.h.tr.DeleteItem(b.h.a, k); err != nil {
		b.t.Fatal(err)
	}
	b.h.del(k)
	b.h.check()
}

func firstKeyUnder(n *diskio.Node, a *ctreetest.Alloc) ondisk.Key {
	for !n.IsLeaf() {
		n = a.Live()[n.KeyPtr(0).BlockPtr].Node
	}
	return n.Key(0)
}

// TestBalanceTakesFromFullLeft: a node with one pointer after a full left
// sibling and no right one takes half of the left's pointers.
func TestBalanceTakesFromFullLeft(t *testing.T) {
	b := newBuilder(t)
	maxPtrs := diskio.MaxKeyPtrs(4096)
	left := b.leaves(maxPtrs)
	mid := b.leaves(1)
	b.tree(b.node(left, mid))
	b.deleteFirstUnder(mid)
	root, _, err := b.h.tr.Search(ondisk.Key{})
	if err != nil {
		t.Fatal(err)
	}
	if n := root.Nodes[2].NumItems(); n != 2 {
		t.Fatalf("root has %d children, want 2", n)
	}
}

// TestBalancePartialPush: an underfull node pushes into a nearly full left
// sibling as much as leaves both with at least 8 pointers.
func TestBalancePartialPush(t *testing.T) {
	b := newBuilder(t)
	maxPtrs := diskio.MaxKeyPtrs(4096)
	left := b.leaves(maxPtrs - 20)
	mid := b.leaves(25)
	b.tree(b.node(left, mid))
	b.deleteFirstUnder(mid)
}

// TestDeleteSlotsEmptiesNodes: deleting through an unbalanced path (insLen
// 0) empties a leaf whose parent has no other child: the parent goes too,
// and the root left with one child is replaced by it; emptying a tree that
// way leaves an empty root leaf.
func TestDeleteSlotsEmptiesNodes(t *testing.T) {
	b := newBuilder(t)
	lonely := b.node(b.leaf(3))
	b.tree(b.node(lonely, b.leaves(5), b.leaves(6)))
	k := firstKeyUnder(lonely, b.h.a)
	p, found, err := b.h.tr.SearchForWrite(b.h.a, k, 0)
	if err != nil || !found {
		t.Fatal(found, err)
	}
	b.deleteFirst(p, 3)
	if b.h.tr.Level != 2 {
		t.Fatalf("level %d, want 2", b.h.tr.Level)
	}

	b = newBuilder(t)
	b.tree(b.node(b.node(b.leaf(3)), b.leaves(4)))
	p, _, err = b.h.tr.SearchForWrite(b.h.a, ondisk.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.deleteFirst(p, 3)
	if b.h.tr.Level != 1 {
		t.Fatalf("level %d, want 1 (root shrunk to its only child)", b.h.tr.Level)
	}

	b = newBuilder(t)
	b.tree(b.node(b.node(b.leaf(3))))
	p, _, err = b.h.tr.SearchForWrite(b.h.a, ondisk.Key{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b.deleteFirst(p, 3)
	if b.h.tr.Level != 0 || len(b.h.a.Live()) != 1 {
		t.Fatalf("level %d, %d blocks; want an empty root leaf", b.h.tr.Level, len(b.h.a.Live()))
	}
}
