// Package ctree searches, walks and modifies (copy-on-write) btrfs B-trees
// (the kernel's ctree.c).
package ctree

import (
	"fmt"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Tree is one B-tree: its ID and the root block.
//
// The write path (SearchForWrite, InsertItem, DeleteItem...) updates Root,
// Level and Gen when the root block is COWed, split or shrunk, sets
// RootChanged and calls OnRootChange, so the transaction can update the
// ROOT_ITEM or the superblock. Blocks the write path got from the Allocator
// stay referenced by the Tree (see ForgetBlocks) so that reads see them
// before they are written: keep one Tree per root for a whole transaction.
// A Tree is not safe for concurrent use while it is being written.
type Tree struct {
	R     *diskio.Reader
	ID    ondisk.ObjectID
	Root  ondisk.LogicalAddr
	Level int
	Gen   ondisk.Generation // generation of the root block, 0 if unknown

	// RootChanged is set whenever the write path moves the root (COW, grow,
	// shrink); the transaction clears it once it has recorded the new root.
	RootChanged bool
	// OnRootChange, if set, is called after every root move.
	OnRootChange func(t *Tree)

	mem map[ondisk.LogicalAddr]*diskio.Node // blocks from the Allocator, by address
}

// Path is the chain of nodes from the root to a leaf with the slot taken at
// each level. Nodes[0] is the leaf. mirrors struct btrfs_path
type Path struct {
	Nodes [ondisk.MaxLevel]*diskio.Node
	Slots [ondisk.MaxLevel]int
	tree  *Tree
}

// readRoot reads the root block.
func (t *Tree) readRoot() (*diskio.Node, error) {
	if n := t.memNode(t.Root, t.Gen); n != nil {
		return n, nil
	}
	if t.Root == 0 || t.R == nil {
		return nil, fmt.Errorf("tree %s: no root", ondisk.TreeName(t.ID))
	}
	return t.R.ReadNode(t.Root, diskio.Expect{Tree: t.ID, Level: t.Level, Generation: t.Gen})
}

// ReadChild reads the child at slot of an internal node, checking what the parent says of it.
func (t *Tree) ReadChild(parent *diskio.Node, slot int) (*diskio.Node, error) {
	kp := parent.KeyPtr(slot)
	if n := t.memNode(kp.BlockPtr, kp.Generation); n != nil {
		if n.Level() != parent.Level()-1 {
			return nil, &diskio.BlockError{Op: "read node", Tree: t.ID, Addr: kp.BlockPtr,
				Err: diskio.Corruptf("level %d, parent %d (level %d) slot %d expects %d",
					n.Level(), uint64(parent.Addr), parent.Level(), slot, parent.Level()-1)}
		}
		return n, nil
	}
	if t.R == nil {
		return nil, fmt.Errorf("read node %d (tree %s): block not in memory and tree has no reader",
			uint64(kp.BlockPtr), ondisk.TreeName(t.ID))
	}
	return t.R.ReadNode(kp.BlockPtr, diskio.Expect{
		Tree: t.ID, Level: parent.Level() - 1, Generation: kp.Generation, FirstKey: &kp.Key,
	})
}

// binSearch returns the first slot whose key is >= key, and whether it is equal.
func binSearch(n *diskio.Node, key ondisk.Key) (int, bool) {
	nr := n.NumItems()
	i := sort.Search(nr, func(i int) bool { return n.Key(i).Compare(key) >= 0 })
	return i, i < nr && n.Key(i) == key
}

// Search finds key. The returned path's leaf slot is at the key if found, or
// at the position where it would be inserted (possibly == nritems).
// mirrors btrfs_search_slot (read-only)
func (t *Tree) Search(key ondisk.Key) (*Path, bool, error) {
	p := &Path{tree: t}
	n, err := t.readRoot()
	if err != nil {
		return nil, false, err
	}
	for {
		lvl := n.Level()
		p.Nodes[lvl] = n
		slot, exact := binSearch(n, key)
		if lvl == 0 {
			p.Slots[0] = slot
			return p, exact, nil
		}
		if !exact && slot > 0 {
			slot--
		}
		p.Slots[lvl] = slot
		n, err = t.ReadChild(n, slot)
		if err != nil {
			return nil, false, err
		}
	}
}

// Valid reports whether the path points at an item.
func (p *Path) Valid() bool {
	return p.Nodes[0] != nil && p.Slots[0] < p.Nodes[0].NumItems()
}

// Key returns the key at the path's leaf slot.
func (p *Path) Key() ondisk.Key { return p.Nodes[0].Key(p.Slots[0]) }

// Data returns the data at the path's leaf slot (a slice of the leaf).
func (p *Path) Data() []byte { return p.Nodes[0].ItemData(p.Slots[0]) }

// Leaf returns the leaf node.
func (p *Path) Leaf() *diskio.Node { return p.Nodes[0] }

// Next moves to the next item, crossing leaves; false at the end of the tree.
// mirrors btrfs_next_item
func (p *Path) Next() (bool, error) {
	if p.Nodes[0] == nil {
		return false, nil
	}
	p.Slots[0]++
	if p.Slots[0] < p.Nodes[0].NumItems() {
		return true, nil
	}
	return p.nextLeaf()
}

// nextLeaf moves to slot 0 of the next leaf. mirrors btrfs_next_leaf
func (p *Path) nextLeaf() (bool, error) {
	lvl := 1
	for ; lvl < ondisk.MaxLevel; lvl++ {
		if p.Nodes[lvl] == nil {
			p.Slots[0] = p.Nodes[0].NumItems()
			return false, nil
		}
		if p.Slots[lvl]+1 < p.Nodes[lvl].NumItems() {
			break
		}
	}
	if lvl == ondisk.MaxLevel {
		return false, nil
	}
	p.Slots[lvl]++
	for l := lvl; l > 0; l-- {
		c, err := p.tree.ReadChild(p.Nodes[l], p.Slots[l])
		if err != nil {
			return false, err
		}
		p.Nodes[l-1] = c
		p.Slots[l-1] = 0
	}
	if p.Nodes[0].NumItems() == 0 {
		return p.nextLeaf()
	}
	return true, nil
}

// Prev moves to the previous item; false at the start of the tree.
func (p *Path) Prev() (bool, error) {
	if p.Nodes[0] == nil {
		return false, nil
	}
	if p.Slots[0] > 0 {
		p.Slots[0]--
		return true, nil
	}
	lvl := 1
	for ; lvl < ondisk.MaxLevel; lvl++ {
		if p.Nodes[lvl] == nil {
			return false, nil
		}
		if p.Slots[lvl] > 0 {
			break
		}
	}
	if lvl == ondisk.MaxLevel {
		return false, nil
	}
	p.Slots[lvl]--
	for l := lvl; l > 0; l-- {
		c, err := p.tree.ReadChild(p.Nodes[l], p.Slots[l])
		if err != nil {
			return false, err
		}
		p.Nodes[l-1] = c
		p.Slots[l-1] = c.NumItems() - 1
	}
	if p.Slots[0] < 0 {
		return p.Prev()
	}
	return true, nil
}

// SearchForward positions at the first item >= key; ok is false if none.
func (t *Tree) SearchForward(key ondisk.Key) (*Path, bool, error) {
	p, _, err := t.Search(key)
	if err != nil {
		return nil, false, err
	}
	if p.Valid() {
		return p, true, nil
	}
	ok, err := p.nextLeaf()
	return p, ok, err
}

// SearchBackward positions at the last item <= key; ok is false if none.
func (t *Tree) SearchBackward(key ondisk.Key) (*Path, bool, error) {
	p, exact, err := t.Search(key)
	if err != nil || exact {
		return p, exact, err
	}
	ok, err := p.Prev()
	return p, ok, err
}

// Lookup returns a copy of the data of the item with exactly key, or found=false.
func (t *Tree) Lookup(key ondisk.Key) ([]byte, bool, error) {
	p, exact, err := t.Search(key)
	if err != nil || !exact {
		return nil, false, err
	}
	return append([]byte(nil), p.Data()...), true, nil
}

// Range calls fn for every item with min <= key <= max, in order, until fn returns false.
func (t *Tree) Range(min, max ondisk.Key, fn func(k ondisk.Key, data []byte) bool) error {
	p, ok, err := t.SearchForward(min)
	for ; err == nil && ok; ok, err = p.Next() {
		k := p.Key()
		if k.Compare(max) > 0 {
			return nil
		}
		if !fn(k, p.Data()) {
			return nil
		}
	}
	return err
}

// Walk visits every block of the tree depth-first, in key order (nodes before
// their children). An error reading a child is passed to fn with a nil node
// and the walk goes on unless fn returns a non-nil error.
func (t *Tree) Walk(fn func(n *diskio.Node, err error) error) error {
	n, err := t.readRoot()
	if err != nil {
		return fn(nil, err)
	}
	return t.walk(n, fn)
}

func (t *Tree) walk(n *diskio.Node, fn func(*diskio.Node, error) error) error {
	if err := fn(n, nil); err != nil {
		return err
	}
	if n.IsLeaf() {
		return nil
	}
	for i := 0; i < n.NumItems(); i++ {
		c, err := t.ReadChild(n, i)
		if err != nil {
			if ferr := fn(nil, err); ferr != nil {
				return ferr
			}
			continue
		}
		if err := t.walk(c, fn); err != nil {
			return err
		}
	}
	return nil
}
