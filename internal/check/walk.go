package check

import (
	"errors"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// treeKind says what a tree holds, and so which leaf visitor reads it.
type treeKind uint8

const (
	kindGeneric treeKind = iota
	kindRoot
	kindExtent
	kindChunk
	kindDev
	kindCsum
	kindFreeSpace
	kindBlockGroup
	kindFS  // subvolumes, the data reloc tree and reloc trees: inodes and file extents
	kindLog // log trees: structure only, their blocks have no extent items
)

// rootInfo is one tree to walk: from the superblock or from a ROOT_ITEM.
type rootInfo struct {
	id        ondisk.ObjectID    // tree id references are counted against
	key       ondisk.Key         // ROOT_ITEM key (zero for roots in the superblock)
	leaf      ondisk.LogicalAddr // leaf holding the ROOT_ITEM
	bytenr    ondisk.LogicalAddr
	level     int
	gen       ondisk.Generation
	item      *item.RootItem // nil for roots in the superblock
	dropping  bool           // a snapshot deletion is in progress (drop_progress set)
	dropKey   ondisk.Key
	dropLevel int
}

// keyRef is the ROOT_ITEM key for problems about the root itself, or nil.
func (ri *rootInfo) keyRef() *ondisk.Key {
	if ri.item == nil {
		return nil
	}
	return keyp(ri.key)
}

// blockInfo is what the checker remembers of every tree block it reached.
type blockInfo struct {
	owner ondisk.ObjectID
	level uint8
}

// walker walks one tree depth-first in key order.
type walker struct {
	c    *checker
	ri   *rootInfo
	kind treeKind
	// countRefs records the references each block makes (to its children
	// and to data extents); off for log trees.
	countRefs bool
	// descendShared also visits blocks already reached through another
	// tree: inodes are checked per subvolume, so a snapshot must see the
	// leaves it shares. Within the tree, visited stops a block listed twice.
	descendShared bool
	visited       map[ondisk.LogicalAddr]bool
	// leaf gets every leaf in key order; fresh is false for a leaf
	// reached before through another tree.
	leaf func(n *diskio.Node, fresh bool)
	// damaged is set when a block of the tree could not be read.
	damaged bool
	// qgroups accounts every block reached (and the data extents its
	// file extents refer to) to the tree's level-0 qgroup.
	qgroups bool
}

func (c *checker) newWalker(ri *rootInfo, kind treeKind, leaf func(*diskio.Node, bool)) *walker {
	w := &walker{c: c, ri: ri, kind: kind, countRefs: kind != kindLog, leaf: leaf}
	if kind == kindFS {
		w.descendShared = true
		w.visited = map[ondisk.LogicalAddr]bool{}
	}
	return w
}

// expectTree is the tree id the block reader checks owners against.
func (w *walker) expectTree() ondisk.ObjectID {
	if w.kind == kindLog {
		return ondisk.TreeLogObjectID
	}
	return w.ri.id
}

// blockErr strips the reader's "read node N (tree T)" wrapper: the problem
// already names the tree and the block.
func blockErr(err error) error {
	var be *diskio.BlockError
	if errors.As(err, &be) {
		return be.Err
	}
	return err
}

// run walks the tree from its root.
func (w *walker) run() {
	c, ri := w.c, w.ri
	c.curTree = ri.id
	if ri.bytenr == 0 {
		c.problem(ClassTree, ri.id, 0, ri.keyRef(), "tree has no root block")
		return
	}
	if c.bad[ri.bytenr] {
		w.damaged = true
		if w.countRefs {
			c.emitRootRef(w, nil)
		}
		return
	}
	n, err := c.r.ReadNode(ri.bytenr, diskio.Expect{Tree: w.expectTree(), Level: ri.level, Generation: ri.gen})
	if w.countRefs {
		c.emitRootRef(w, n) // the root item refers to the block even if it cannot be read
	}
	if err != nil {
		c.bad[ri.bytenr] = true
		w.damaged = true
		c.problem(ClassTree, ri.id, ri.bytenr, ri.keyRef(), "read root block: %v", blockErr(err))
		return
	}
	if n.Level() != ri.level {
		c.problem(ClassTree, ri.id, ri.bytenr, ri.keyRef(), "root block level %d, root item says %d", n.Level(), ri.level)
		return
	}
	seen := w.seen(n.Addr)
	if seen && !w.descendShared {
		return
	}
	c.markBlock(w, n)
	w.visit(n, !seen, true)
}

// seen reports whether the block was reached before (log trees keep
// their own set: their blocks are not in the extent tree).
func (w *walker) seen(addr ondisk.LogicalAddr) bool {
	if w.kind == kindLog {
		return w.c.logged[addr]
	}
	_, ok := w.c.blocks[addr]
	return ok
}

// markBlock remembers a block as reached (log tree blocks apart).
func (c *checker) markBlock(w *walker, n *diskio.Node) {
	if w.kind == kindLog {
		c.logged[n.Addr] = true
		return
	}
	if _, ok := c.blocks[n.Addr]; !ok {
		c.blocks[n.Addr] = blockInfo{owner: n.Owner(), level: uint8(n.Level())}
	}
}

// visit checks a block reached for the first time (fresh) and goes down.
func (w *walker) visit(n *diskio.Node, fresh, isRoot bool) {
	c := w.c
	if w.visited != nil {
		w.visited[n.Addr] = true
	}
	if fresh {
		c.checkBlock(w, n, isRoot)
	}
	if w.qgroups {
		c.qgroupBlock(w, n)
	}
	if n.IsLeaf() {
		if fresh && w.countRefs && (w.kind == kindFS || w.kind == kindRoot) {
			c.emitDataRefs(w, n)
		}
		if (fresh || w.descendShared) && w.leaf != nil {
			w.leaf(n, fresh)
		}
		return
	}
	lvl := n.Level()
	nr := n.NumItems()
	start := 0
	ri := w.ri
	if ri.dropping && ri.dropLevel > 0 && lvl > ri.dropLevel {
		// mirrors the btrfs check walk: slots wholly before the drop key are gone
		start = sort.Search(nr, func(i int) bool { return n.Key(i).Compare(ri.dropKey) > 0 }) - 1
		start = max(start, 0)
	}
	for i := start; i < nr; i++ {
		kp := n.KeyPtr(i)
		if ri.dropping && lvl == ri.dropLevel && kp.Key.Less(ri.dropKey) {
			continue
		}
		if fresh && w.countRefs {
			c.emitTreeRef(w, n, i, kp)
		}
		w.child(n, i, kp)
	}
}

// child reads the block at slot i of n, checks it against the key pointer
// and visits it.
func (w *walker) child(n *diskio.Node, i int, kp ondisk.KeyPtr) {
	c, ri := w.c, w.ri
	addr := kp.BlockPtr
	if c.bad[addr] {
		w.damaged = true
		return
	}
	seen := w.seen(addr)
	if seen && !w.descendShared {
		return
	}
	if w.visited != nil && w.visited[addr] {
		c.problem(ClassTree, ri.id, n.Addr, keyp(kp.Key), "slot %d points to block %d, already reached in this tree", i, addr)
		return
	}
	lvl := n.Level()
	ch, err := c.r.ReadNode(addr, diskio.Expect{Tree: w.expectTree(), Level: lvl - 1, Generation: kp.Generation, FirstKey: &kp.Key})
	if err != nil {
		c.bad[addr] = true
		w.damaged = true
		c.problem(ClassTree, ri.id, addr, keyp(kp.Key), "read block (parent %d slot %d): %v", n.Addr, i, blockErr(err))
		return
	}
	// The reader checks cached blocks against this parent too (a pointer to
	// the node itself or an ancestor fails its level rule); these checks
	// only word the problem for the report.
	if ch.Level() != lvl-1 {
		w.damaged = true
		c.problem(ClassTree, ri.id, addr, keyp(kp.Key), "level %d, parent %d (level %d) slot %d expects %d",
			ch.Level(), n.Addr, lvl, i, lvl-1)
		return
	}
	if ch.NumItems() > 0 {
		if k := ch.Key(0); k != kp.Key {
			c.problem(ClassTree, ri.id, addr, keyp(kp.Key), "first key %v, parent %d slot %d says %v", k, n.Addr, i, kp.Key)
		}
		if i+1 < n.NumItems() {
			next := n.Key(i + 1)
			if last := ch.Key(ch.NumItems() - 1); last.Compare(next) >= 0 {
				c.problem(ClassTree, ri.id, addr, keyp(last), "last key %v is not below the parent's next key %v (parent %d slot %d)",
					last, next, n.Addr, i+1)
			}
		}
	}
	c.markBlock(w, ch)
	w.visit(ch, !seen, false)
}

// isFSTree reports whether id is a subvolume-like tree (holds inodes).
// mirrors is_fstree
func isFSTree(id ondisk.ObjectID) bool {
	return id == ondisk.FSTreeObjectID || id == ondisk.DataRelocTreeObjectID ||
		(id >= ondisk.FirstFreeObjectID && id <= ondisk.LastFreeObjectID)
}
