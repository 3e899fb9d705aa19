package check

import (
	"fmt"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// lookupRoot finds the ROOT_ITEM of tree id with a search (before the
// root tree walk has listed them all).
func (c *checker) lookupRoot(id ondisk.ObjectID) (*rootInfo, error) {
	p, ok, err := c.fi.RootTree.SearchBackward(ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey, Offset: ^uint64(0)})
	if err != nil {
		return nil, err
	}
	if !ok || p.Key().ObjectID != id || p.Key().Type != ondisk.RootItemKey {
		return nil, errNoRoot
	}
	return c.rootInfoOf(p.Leaf(), p.Key(), p.Data())
}

var errNoRoot = diskio.Corruptf("no ROOT_ITEM")

// rootInfoOf decodes a ROOT_ITEM into a tree to walk.
func (c *checker) rootInfoOf(n *diskio.Node, k ondisk.Key, d []byte) (*rootInfo, error) {
	it, err := item.DecodeRootItem(d)
	if err != nil {
		return nil, err
	}
	ri := &rootInfo{id: k.ObjectID, key: k, leaf: n.Addr, bytenr: it.Bytenr, level: int(it.Level), gen: it.Generation, item: &it}
	if it.DropProgress.ObjectID != 0 {
		ri.dropping = true
		ri.dropKey = it.DropProgress
		ri.dropLevel = int(it.DropLevel)
	}
	return ri, nil
}

// walkRootTree walks the root tree, listing every tree's ROOT_ITEM and the
// subvolume links.
func (c *checker) walkRootTree() {
	ri := &rootInfo{id: ondisk.RootTreeObjectID, bytenr: c.sb.Root, level: int(c.sb.RootLevel), gen: c.sb.Generation}
	w := c.newWalker(ri, kindRoot, func(n *diskio.Node, fresh bool) {
		for i := 0; i < n.NumItems(); i++ {
			c.rootTreeItem(n, n.Key(i), n.ItemData(i))
		}
	})
	w.run()
	sort.SliceStable(c.roots, func(i, j int) bool { return c.roots[i].key.Less(c.roots[j].key) })
}

func (c *checker) rootTreeItem(n *diskio.Node, k ondisk.Key, d []byte) {
	bad := func(format string, args ...any) {
		c.problem(ClassTree, ondisk.RootTreeObjectID, n.Addr, keyp(k), format, args...)
	}
	switch k.Type {
	case ondisk.RootItemKey:
		ri, err := c.rootInfoOf(n, k, d)
		if err != nil {
			bad("%v", err)
			return
		}
		c.checkRootItem(ri, bad)
		c.roots = append(c.roots, ri)
		if c.rootOf[ri.id] == nil {
			c.rootOf[ri.id] = ri
		}
	case ondisk.RootRefKey, ondisk.RootBackrefKey:
		r, err := item.DecodeRootRef(d)
		if err != nil {
			c.problem(ClassRootRef, ondisk.RootTreeObjectID, n.Addr, keyp(k), "%v", err)
			return
		}
		c.subvol.addRootRef(n, k, r)
	case ondisk.OrphanItemKey:
		if k.ObjectID == ondisk.OrphanObjectID {
			c.orphanRoots[ondisk.ObjectID(k.Offset)] = true
		}
	default:
		c.spaceCacheItem(n, k, d)
	}
}

// checkRootItem checks a ROOT_ITEM on its own.
func (c *checker) checkRootItem(ri *rootInfo, bad func(string, ...any)) {
	it := ri.item
	if it.Level >= ondisk.MaxLevel {
		bad("root level %d out of range", it.Level)
	}
	if uint64(it.Bytenr)%c.sectorsize != 0 {
		bad("root bytenr %d not aligned to sectorsize %d", it.Bytenr, c.sectorsize)
	}
	if it.Generation > c.sb.Generation {
		bad("root generation %d is newer than the superblock's %d", it.Generation, c.sb.Generation)
	}
	if isFSTree(ri.id) && it.RootDirID != ondisk.FirstFreeObjectID {
		bad("subvolume root_dirid %d, expected %d", it.RootDirID, ondisk.FirstFreeObjectID)
	}
}

// walkChunkTree walks the chunk tree from the superblock.
func (c *checker) walkChunkTree() {
	ri := &rootInfo{id: ondisk.ChunkTreeObjectID, bytenr: c.sb.ChunkRoot, level: int(c.sb.ChunkRootLevel), gen: c.sb.ChunkRootGeneration}
	w := c.newWalker(ri, kindChunk, func(n *diskio.Node, fresh bool) {
		for i := 0; i < n.NumItems(); i++ {
			c.chunkTreeItem(n, n.Key(i), n.ItemData(i))
		}
	})
	w.run()
}

// walkGlobalTrees walks the trees of the root tree that are not
// subvolumes, each with the visitor for its items.
func (c *checker) walkGlobalTrees() {
	for _, ri := range c.roots {
		if ri.id == ondisk.ExtentTreeObjectID || isFSTree(ri.id) || ri.id == ondisk.TreeRelocObjectID {
			continue
		}
		var w *walker
		switch ri.id {
		case ondisk.DevTreeObjectID:
			w = c.newWalker(ri, kindDev, c.devTreeLeaf)
		case ondisk.CsumTreeObjectID:
			w = c.newWalker(ri, kindCsum, c.csumTreeLeaf)
		case ondisk.QuotaTreeObjectID:
			c.qg = newQgroupState()
			w = c.newWalker(ri, kindGeneric, c.quotaLeaf)
		case ondisk.FreeSpaceTreeObjectID:
			c.fst = newFreeSpaceState()
			w = c.newWalker(ri, kindFreeSpace, c.freeSpaceLeaf)
		case ondisk.BlockGroupTreeObjectID:
			w = c.newWalker(ri, kindBlockGroup, func(n *diskio.Node, fresh bool) {
				for i := 0; i < n.NumItems(); i++ {
					k := n.Key(i)
					if k.Type != ondisk.BlockGroupItemKey {
						c.problem(ClassBlockGroup, ondisk.BlockGroupTreeObjectID, n.Addr, keyp(k), "unexpected %s item in the block group tree", k.Type)
						continue
					}
					c.blockGroupItem(ondisk.BlockGroupTreeObjectID, n, k, n.ItemData(i))
				}
			})
		default:
			w = c.newWalker(ri, kindGeneric, nil)
		}
		w.run()
	}
	if c.fst != nil {
		c.fst.finish()
	}
}

// walkFSTrees walks the subvolumes (with their inodes), the data reloc
// tree and reloc trees.
func (c *checker) walkFSTrees() {
	for _, ri := range c.roots {
		if !isFSTree(ri.id) && ri.id != ondisk.TreeRelocObjectID {
			continue
		}
		var ic *inodeChecker
		if isFSTree(ri.id) && !ri.dropping && ri.item.Refs != 0 {
			ic = newInodeChecker(c, ri)
		}
		var leaf func(*diskio.Node, bool)
		if ic != nil {
			leaf = ic.leaf
		}
		w := c.newWalker(ri, kindFS, leaf)
		w.qgroups = c.qg != nil && isQgroupTree(ri.id)
		w.run()
		if w.qgroups && w.damaged {
			c.qg.unsure = append(c.qg.unsure, fmt.Sprintf("tree %s has unreadable blocks", ondisk.TreeName(ri.id)))
		}
		if ic != nil {
			ic.finish(w.damaged)
			c.subvol.checked[ri.id] = !w.damaged
		}
	}
}

// walkLogTrees walks the log root tree and the log trees it lists, for
// structure only: log blocks have no extent items.
func (c *checker) walkLogTrees() {
	if c.sb.LogRoot == 0 {
		return
	}
	var logs []*rootInfo
	lri := &rootInfo{id: ondisk.TreeLogObjectID, bytenr: c.sb.LogRoot, level: int(c.sb.LogRootLevel)}
	w := c.newWalker(lri, kindLog, func(n *diskio.Node, fresh bool) {
		for i := 0; i < n.NumItems(); i++ {
			k := n.Key(i)
			if k.Type != ondisk.RootItemKey {
				continue
			}
			ri, err := c.rootInfoOf(n, k, n.ItemData(i))
			if err != nil {
				c.problem(ClassTree, ondisk.TreeLogObjectID, n.Addr, keyp(k), "%v", err)
				continue
			}
			logs = append(logs, ri)
		}
	})
	w.run()
	for _, ri := range logs {
		s := &logTreeScan{c: c, ri: ri}
		w := c.newWalker(ri, kindLog, s.leaf)
		w.run()
		if !w.damaged {
			s.finish()
		}
	}
}
