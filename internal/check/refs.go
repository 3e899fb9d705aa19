package check

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// refSrc is where a reference was found: a key pointer of a node, a file
// extent item, a ROOT_ITEM, or the superblock (tree 0).
type refSrc struct {
	tree  ondisk.ObjectID
	block ondisk.LogicalAddr
	key   ondisk.Key
	data  bool
}

// keyRef is the key for problems found at the source, nil for the superblock.
func (s refSrc) keyRef() *ondisk.Key {
	if s.tree == 0 {
		return nil
	}
	return keyp(s.key)
}

func (s refSrc) String() string {
	if s.tree == 0 {
		return "the superblock"
	}
	what := "key pointer"
	if s.data {
		what = "file extent"
	} else if s.tree == ondisk.RootTreeObjectID && s.key.Type == ondisk.RootItemKey {
		what = "root item"
	}
	return fmt.Sprintf("%s %v in tree %s block %d", what, s.key, ondisk.TreeName(s.tree), s.block)
}

// pendingRef is a reference found before the extent items were read.
type pendingRef struct {
	bytenr, numBytes uint64
	typ              ondisk.ItemType
	root, ino, off   uint64
	src              refSrc
}

type refState struct {
	ready    bool
	deferred []pendingRef
}

// addTreeRef counts a reference to the tree block at bytenr.
func (c *checker) addTreeRef(bytenr ondisk.LogicalAddr, typ ondisk.ItemType, root uint64, src refSrc) {
	p := pendingRef{bytenr: uint64(bytenr), numBytes: c.nodesize, typ: typ, root: root, src: src}
	if !c.refs.ready {
		c.refs.deferred = append(c.refs.deferred, p)
		return
	}
	c.applyRef(&p)
}

// addDataRef counts a reference from a file extent item to a data extent.
func (c *checker) addDataRef(bytenr, numBytes uint64, typ ondisk.ItemType, root, ino, off uint64, src refSrc) {
	p := pendingRef{bytenr: bytenr, numBytes: numBytes, typ: typ, root: root, ino: ino, off: off, src: src}
	if !c.refs.ready {
		c.refs.deferred = append(c.refs.deferred, p)
		return
	}
	c.applyRef(&p)
}

func (c *checker) applyDeferredRefs() {
	for i := range c.refs.deferred {
		c.applyRef(&c.refs.deferred[i])
	}
	c.refs.deferred = nil
}

// applyRef matches a found reference against the extent items.
func (c *checker) applyRef(p *pendingRef) {
	data := p.typ == ondisk.ExtentDataRefKey || p.typ == ondisk.SharedDataRefKey
	what := "tree block"
	if data {
		what = "data extent"
	}
	i := c.ext.find(p.bytenr)
	if i < 0 {
		msg := fmt.Sprintf("%s %d referenced by %s has no extent item", what, p.bytenr, p.src)
		if j := c.ext.containing(p.bytenr); j >= 0 {
			e := &c.ext.recs[j]
			msg += fmt.Sprintf(" (it lies inside extent [%d, %d) of %v)", e.start, e.end(), e.key)
		}
		c.problem(ClassExtent, p.src.tree, p.src.block, p.src.keyRef(), "%s", msg)
		return
	}
	e := &c.ext.recs[i]
	if e.broken {
		return
	}
	if data && e.metadata {
		c.problem(ClassExtent, p.src.tree, p.src.block, p.src.keyRef(), "file extent points to %d, which is a tree block extent %v", p.bytenr, e.key)
		return
	}
	if !data && !e.metadata {
		c.problem(ClassExtent, p.src.tree, p.src.block, p.src.keyRef(), "tree block pointer to %d, which is a data extent %v", p.bytenr, e.key)
		return
	}
	if data && p.numBytes != e.length {
		c.problem(ClassExtent, p.src.tree, p.src.block, p.src.keyRef(), "file extent disk_num_bytes %d, extent item %v has length %d",
			p.numBytes, e.key, e.length)
	}
	e.found++
	if b := e.match(p.typ, p.root, p.ino, p.off); b != nil {
		b.found++
		return
	}
	b := e.addBackref(backref{typ: p.typ, root: p.root, ino: p.ino, off: p.off, found: 1})
	c.problem(ClassExtent, ondisk.ExtentTreeObjectID, e.leaf, keyp(e.key), "no backref %s for the reference from %s", b.String(), p.src)
}

// checkExtentRefs compares every extent item with the references found.
// mirrors check_extent_refs and all_backpointers_checked
func (c *checker) checkExtentRefs() {
	superGen := uint64(c.sb.Generation)
	var prev *extentRec
	for i := range c.ext.recs {
		e := &c.ext.recs[i]
		bad := func(format string, args ...any) {
			c.problem(ClassExtent, ondisk.ExtentTreeObjectID, e.leaf, keyp(e.key), format, args...)
		}
		if prev != nil && e.start < prev.end() {
			bad("extent [%d, %d) overlaps extent [%d, %d) of %v", e.start, e.end(), prev.start, prev.end(), prev.key)
		}
		if prev == nil || e.end() > prev.end() {
			prev = e
		}
		if e.broken {
			continue
		}
		if e.gen > superGen+1 {
			bad("generation %d is newer than the superblock's %d", e.gen, superGen)
		}
		if e.metadata && e.length <= 65536 && e.start/65536 != (e.end()-1)/65536 {
			bad("tree block [%d, %d) crosses a 64KiB stripe boundary", e.start, e.end())
		}
		var declared uint64
		for j := range e.backrefs {
			declared += uint64(e.backrefs[j].count)
		}
		if declared != e.refs {
			bad("refs %d but the backrefs add up to %d", e.refs, declared)
		}
		if e.found != e.refs {
			bad("refs %d but %d references found in the trees", e.refs, e.found)
		}
		for j := range e.backrefs {
			b := &e.backrefs[j]
			if b.count == 0 || b.count == b.found {
				continue // undeclared references were reported when found
			}
			switch {
			case b.found == 0 && (b.typ == ondisk.SharedBlockRefKey || b.typ == ondisk.SharedDataRefKey):
				bad("%s: block %d does not point to this extent", b.String(), b.root)
			case b.found == 0:
				bad("%s: no such reference found", b.String())
			default:
				bad("%s: count %d but %d references found", b.String(), b.count, b.found)
			}
		}
		if e.metadata {
			c.checkTreeBlockExtent(e, bad)
		}
	}
}

// checkTreeBlockExtent compares a tree block's extent item with the block.
func (c *checker) checkTreeBlockExtent(e *extentRec, bad func(string, ...any)) {
	bi, ok := c.blocks[ondisk.LogicalAddr(e.start)]
	if !ok {
		return
	}
	if bi.level != e.level {
		bad("extent item says level %d, the block is level %d", e.level, bi.level)
	}
	if e.flags&item.BlockFlagFullBackref != 0 && !isFSTree(bi.owner) && bi.owner != ondisk.TreeRelocObjectID {
		bad("FULL_BACKREF flag on a block of %s", ondisk.TreeName(bi.owner))
	}
}
