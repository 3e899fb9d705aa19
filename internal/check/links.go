package check

import (
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// linkKey names one directory entry: a name in a directory.
type linkKey struct {
	dir  uint64
	name string
}

// linkRec gathers the three items that make one name: the child's
// INODE_REF (or INODE_EXTREF), and the directory's DIR_ITEM and DIR_INDEX.
// Subvolume entries have no INODE_REF (their ROOT_REF is in the root tree).
type linkRec struct {
	hasRef   bool
	child    uint64
	refIndex uint64
	refType  uint8 // from the child's mode, 0 if unknown
	refKey   ondisk.Key
	refLeaf  ondisk.LogicalAddr

	hasIdx  bool
	idx     uint64
	idxLoc  ondisk.Key
	idxType uint8
	idxKey  ondisk.Key
	idxLeaf ondisk.LogicalAddr

	hasItem  bool
	itemLoc  ondisk.Key
	itemType uint8
	itemKey  ondisk.Key
	itemLeaf ondisk.LogicalAddr
}

func (l *linkRec) subvol() bool {
	return l.hasIdx && l.idxLoc.Type == ondisk.RootItemKey || l.hasItem && l.itemLoc.Type == ondisk.RootItemKey
}

func (ic *inodeChecker) link(dir uint64, name []byte) (linkKey, *linkRec) {
	k := linkKey{dir, string(name)}
	l := ic.links[k]
	if l == nil {
		l = &linkRec{}
		ic.links[k] = l
	}
	return k, l
}

// addRef records a name of the current inode from its INODE_REF/EXTREF.
func (ic *inodeChecker) addRef(k ondisk.Key, parent, index uint64, name []byte) {
	lk, l := ic.link(parent, name)
	if l.hasRef {
		ic.bad(k, "second INODE_REF for name %q in directory %d", name, parent)
		return
	}
	l.hasRef, l.child, l.refIndex, l.refKey, l.refLeaf = true, ic.cur.ino, index, k, ic.leafAddr
	if ic.cur.haveItem {
		l.refType = modeType(ic.cur.mode)
	}
	ic.tryComplete(lk, l)
}

// addEntry records a DIR_ITEM or DIR_INDEX entry of the current directory.
func (ic *inodeChecker) addEntry(k ondisk.Key, loc ondisk.Key, typ uint8, name []byte) {
	lk, l := ic.link(ic.cur.ino, name)
	if k.Type == ondisk.DirIndexKey {
		if l.hasIdx {
			ic.bad(k, "second DIR_INDEX for name %q (the first is %v)", name, l.idxKey)
			return
		}
		l.hasIdx, l.idx, l.idxLoc, l.idxType, l.idxKey, l.idxLeaf = true, k.Offset, loc, typ, k, ic.leafAddr
	} else {
		if l.hasItem {
			ic.bad(k, "second DIR_ITEM entry for name %q", name)
			return
		}
		l.hasItem, l.itemLoc, l.itemType, l.itemKey, l.itemLeaf = true, loc, typ, k, ic.leafAddr
	}
	ic.tryComplete(lk, l)
}

// tryComplete checks a name once all its items are known, and forgets it.
func (ic *inodeChecker) tryComplete(lk linkKey, l *linkRec) {
	if l.subvol() {
		if l.hasIdx && l.hasItem {
			ic.verifySubvolLink(lk, l)
			delete(ic.links, lk)
		}
		return
	}
	if l.hasRef && l.hasIdx && l.hasItem {
		ic.verifyLink(lk, l)
		delete(ic.links, lk)
	}
}

func (ic *inodeChecker) linkProblem(k ondisk.Key, leaf ondisk.LogicalAddr, format string, args ...any) {
	ic.c.problem(ClassInode, ic.tree, leaf, keyp(k), format, args...)
}

// verifyLink compares the three items of a name.
// mirrors add_inode_backref's REF_ERR_* checks
func (ic *inodeChecker) verifyLink(lk linkKey, l *linkRec) {
	if uint64(l.idxLoc.ObjectID) != l.child {
		ic.linkProblem(l.idxKey, l.idxLeaf, "DIR_INDEX %q points to inode %d, but inode %d's INODE_REF has that name", lk.name, l.idxLoc.ObjectID, l.child)
	}
	if uint64(l.itemLoc.ObjectID) != l.child {
		ic.linkProblem(l.itemKey, l.itemLeaf, "DIR_ITEM %q points to inode %d, but inode %d's INODE_REF has that name", lk.name, l.itemLoc.ObjectID, l.child)
	}
	if l.idx != l.refIndex {
		ic.linkProblem(l.refKey, l.refLeaf, "INODE_REF %q has index %d, the DIR_INDEX is %d", lk.name, l.refIndex, l.idx)
	}
	if l.refType == 0 { // no inode item to compare with (reported with the inode)
		if l.idxType != l.itemType {
			ic.linkProblem(l.idxKey, l.idxLeaf, "DIR_INDEX %q has type %d, its DIR_ITEM type %d", lk.name, l.idxType, l.itemType)
		}
		return
	}
	if l.idxType != l.refType {
		ic.linkProblem(l.idxKey, l.idxLeaf, "DIR_INDEX %q has type %d, inode %d's mode says %d", lk.name, l.idxType, l.child, l.refType)
	}
	if l.itemType != l.refType {
		ic.linkProblem(l.itemKey, l.itemLeaf, "DIR_ITEM %q has type %d, inode %d's mode says %d", lk.name, l.itemType, l.child, l.refType)
	}
}

// verifySubvolLink compares the DIR_ITEM and DIR_INDEX of a subvolume
// entry and records it for the ROOT_REF check.
func (ic *inodeChecker) verifySubvolLink(lk linkKey, l *linkRec) {
	if l.idxLoc != l.itemLoc {
		ic.linkProblem(l.idxKey, l.idxLeaf, "DIR_INDEX %q points to %v, its DIR_ITEM to %v", lk.name, l.idxLoc, l.itemLoc)
		return
	}
	if l.idxType != item.FTDir || l.itemType != item.FTDir {
		ic.linkProblem(l.idxKey, l.idxLeaf, "subvolume entry %q has types %d/%d, expected %d (DIR)", lk.name, l.idxType, l.itemType, item.FTDir)
	}
	ic.c.subvol.addEntry(subvolKey{ic.tree, lk.dir, lk.name},
		subvolEntry{child: l.idxLoc.ObjectID, index: l.idx, key: l.idxKey, leaf: l.idxLeaf})
	if ic.c.rootOf[l.idxLoc.ObjectID] == nil && !ic.c.orphanRoots[l.idxLoc.ObjectID] {
		// a snapshot keeps the entries of the nested subvolumes of its
		// source, which may have been deleted since: allowed, but odd
		ic.c.rep.warn("tree %s %v: entry %q points to subvolume %d, which does not exist",
			ondisk.TreeName(ic.tree), l.idxKey, lk.name, l.idxLoc.ObjectID)
	}
}

// finishLinks reports the names whose items never all showed up.
func (ic *inodeChecker) finishLinks() {
	keys := make([]linkKey, 0, len(ic.links))
	for k := range ic.links {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].dir < keys[j].dir || keys[i].dir == keys[j].dir && keys[i].name < keys[j].name
	})
	lookups := 0
	for _, lk := range keys {
		l := ic.links[lk]
		if ic.orphanDirs[lk.dir] {
			continue // mirrors btrfs check: an orphan's entries are not checked
		}
		switch {
		case l.subvol() && !l.hasIdx:
			ic.linkProblem(l.itemKey, l.itemLeaf, "DIR_ITEM %q for subvolume %d has no DIR_INDEX", lk.name, l.itemLoc.ObjectID)
		case l.subvol():
			ic.linkProblem(l.idxKey, l.idxLeaf, "DIR_INDEX %q for subvolume %d has no DIR_ITEM", lk.name, l.idxLoc.ObjectID)
		case l.hasRef && !l.hasIdx && !l.hasItem:
			ic.linkProblem(l.refKey, l.refLeaf, "INODE_REF %q: directory %d has no DIR_ITEM or DIR_INDEX with that name", lk.name, lk.dir)
		case l.hasRef && !l.hasIdx:
			ic.linkProblem(l.refKey, l.refLeaf, "INODE_REF %q: directory %d has no DIR_INDEX with that name", lk.name, lk.dir)
		case l.hasRef:
			ic.linkProblem(l.refKey, l.refLeaf, "INODE_REF %q: directory %d has no DIR_ITEM with that name", lk.name, lk.dir)
		default:
			k, leaf, child, what := l.idxKey, l.idxLeaf, l.idxLoc.ObjectID, "DIR_INDEX"
			if !l.hasIdx {
				k, leaf, child, what = l.itemKey, l.itemLeaf, l.itemLoc.ObjectID, "DIR_ITEM"
			}
			why := "has no INODE_REF for it"
			if lookups++; lookups <= 100 && !ic.inodeExists(child) {
				why = "does not exist"
			}
			ic.linkProblem(k, leaf, "%s %q points to inode %d, which %s", what, lk.name, child, why)
			if l.hasIdx != l.hasItem {
				missing := "DIR_ITEM"
				if !l.hasIdx {
					missing = "DIR_INDEX"
				}
				ic.linkProblem(k, leaf, "%s %q has no matching %s", what, lk.name, missing)
			}
		}
	}
	ic.links = nil
}

// inodeExists looks the INODE_ITEM of ino up in the tree.
func (ic *inodeChecker) inodeExists(ino ondisk.ObjectID) bool {
	t := &ctree.Tree{R: ic.c.r, ID: ic.tree, Root: ic.ri.bytenr, Level: ic.ri.level, Gen: ic.ri.gen}
	_, ok, err := t.Lookup(ondisk.Key{ObjectID: ino, Type: ondisk.InodeItemKey})
	return ok || err != nil
}
