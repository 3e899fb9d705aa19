package check

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// rootRefRec is a ROOT_REF (key: parent, ROOT_REF, child) or ROOT_BACKREF
// (key: child, ROOT_BACKREF, parent).
type rootRefRec struct {
	parent, child ondisk.ObjectID
	dirid         uint64
	seq           uint64
	name          string
	key           ondisk.Key
	leaf          ondisk.LogicalAddr
}

type rootRefID struct {
	parent, child ondisk.ObjectID
	dirid         uint64
	name          string
}

func (r *rootRefRec) id() rootRefID { return rootRefID{r.parent, r.child, r.dirid, r.name} }

// subvolKey is a name in a directory of a subvolume tree.
type subvolKey struct {
	tree ondisk.ObjectID
	dir  uint64
	name string
}

// subvolEntry is a DIR_ITEM/DIR_INDEX pair that points to a subvolume.
type subvolEntry struct {
	child ondisk.ObjectID
	index uint64
	key   ondisk.Key
	leaf  ondisk.LogicalAddr
}

type subvolState struct {
	refs     []rootRefRec
	backrefs []rootRefRec
	entries  map[subvolKey]subvolEntry
	checked  map[ondisk.ObjectID]bool // trees whose names were all checked
}

func (s *subvolState) init() {
	s.entries = map[subvolKey]subvolEntry{}
	s.checked = map[ondisk.ObjectID]bool{}
}

func (s *subvolState) addRootRef(n *diskio.Node, k ondisk.Key, r item.RootRef) {
	rec := rootRefRec{dirid: uint64(r.DirID), seq: r.Sequence, name: string(r.Name), key: k, leaf: n.Addr}
	if k.Type == ondisk.RootRefKey {
		rec.parent, rec.child = k.ObjectID, ondisk.ObjectID(k.Offset)
		s.refs = append(s.refs, rec)
		return
	}
	rec.child, rec.parent = k.ObjectID, ondisk.ObjectID(k.Offset)
	s.backrefs = append(s.backrefs, rec)
}

func (s *subvolState) addEntry(k subvolKey, e subvolEntry) { s.entries[k] = e }

// checkSubvolRefs matches ROOT_REFs with ROOT_BACKREFs and with the
// subvolume entries of the parent trees, and looks for subvolumes nothing
// links. Entries without a ROOT_REF are allowed: a snapshot keeps the
// entries of the nested subvolumes of its source.
// mirrors check_root_refs
func (c *checker) checkSubvolRefs() {
	s := &c.subvol
	back := map[rootRefID]*rootRefRec{}
	for i := range s.backrefs {
		b := &s.backrefs[i]
		back[b.id()] = b
	}
	referenced := map[ondisk.ObjectID]bool{}
	for i := range s.refs {
		r := &s.refs[i]
		bad := func(format string, args ...any) {
			c.problem(ClassRootRef, ondisk.RootTreeObjectID, r.leaf, keyp(r.key), format, args...)
		}
		referenced[r.child] = true
		if b := back[r.id()]; b == nil {
			bad("ROOT_REF %q (dir %d) has no matching ROOT_BACKREF (%d ROOT_BACKREF %d)", r.name, r.dirid, r.child, r.parent)
		} else {
			delete(back, r.id())
			if b.seq != r.seq {
				bad("ROOT_REF %q index %d, its ROOT_BACKREF says %d", r.name, r.seq, b.seq)
			}
		}
		if c.rootOf[r.child] == nil {
			bad("ROOT_REF to subvolume %d, which has no ROOT_ITEM", r.child)
		}
		if c.rootOf[r.parent] == nil {
			bad("ROOT_REF from tree %d, which has no ROOT_ITEM", r.parent)
			continue
		}
		if !s.checked[r.parent] {
			continue
		}
		e, ok := s.entries[subvolKey{r.parent, r.dirid, r.name}]
		switch {
		case !ok:
			bad("no DIR_ITEM/DIR_INDEX %q in directory %d of tree %d for subvolume %d", r.name, r.dirid, r.parent, r.child)
		case e.child != r.child:
			bad("directory entry %q in tree %d points to subvolume %d, not %d", r.name, r.parent, e.child, r.child)
		case e.index != r.seq:
			bad("ROOT_REF %q index %d, the DIR_INDEX is %d", r.name, r.seq, e.index)
		}
	}
	for i := range s.backrefs {
		b := &s.backrefs[i]
		if back[b.id()] == b {
			c.problem(ClassRootRef, ondisk.RootTreeObjectID, b.leaf, keyp(b.key), "ROOT_BACKREF %q (dir %d) has no matching ROOT_REF", b.name, b.dirid)
		}
	}
	for _, ri := range c.roots {
		if ri.id < ondisk.FirstFreeObjectID || ri.id > ondisk.LastFreeObjectID || referenced[ri.id] || c.orphanRoots[ri.id] {
			continue
		}
		c.problem(ClassRootRef, ondisk.RootTreeObjectID, ri.leaf, keyp(ri.key), "subvolume %d is not linked by any ROOT_REF and has no ORPHAN_ITEM", ri.id)
	}
}
