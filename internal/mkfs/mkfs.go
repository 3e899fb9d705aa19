// Package mkfs makes a new, empty btrfs filesystem: the image mkfs.btrfs
// 6.2 leaves (same chunks in the same places, same trees and item kinds),
// laid out directly in memory and written once, without a transaction
// engine. BuildTree, the bulk loader it uses, packs any sorted item list
// into a tree.
package mkfs

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/copyin"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// image is the filesystem being made.
type image struct {
	p     *params
	plan  *chunkPlan
	trees map[ondisk.ObjectID]*Tree
}

// Make writes a new filesystem described by cfg to dev. mirrors make_btrfs
// and the steps of mkfs.btrfs's main after it (block groups, root
// directories, data reloc and uuid trees, removal of temporary chunks):
//
//  1. resolve defaults and check the config (sizes, features, profiles);
//  2. plan the chunks where mkfs.btrfs 6.2 puts them;
//  3. lay out every tree, reserving blocks until their count is stable
//     (the extent tree and free space tree describe the blocks themselves);
//  4. wipe old signatures, write every tree block (both copies for DUP),
//     flush, then write the superblock and its mirrors and flush again;
//  5. with Rootdir, copy the directory in (internal/copyin) and commit.
func Make(dev blockdev.Device, cfg Config) error {
	p, err := resolve(cfg, uint64(dev.Size()))
	if err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	var alg compress.Alg
	if p.Rootdir != "" {
		// refuse a bad --rootdir before anything is written
		if st, err := os.Stat(p.Rootdir); err != nil {
			return fmt.Errorf("mkfs: --rootdir: %w", err)
		} else if !st.IsDir() {
			return fmt.Errorf("mkfs: --rootdir %s: not a directory", p.Rootdir)
		}
		if p.Compress != "" {
			if alg, err = compress.ParseAlg(p.Compress); err != nil {
				return fmt.Errorf("mkfs: --compress: %w", err)
			}
		}
	}
	plan, err := planChunks(p)
	if err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	im := &image{p: p, plan: plan}
	if err := im.layout(); err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	if err := im.write(dev); err != nil {
		return fmt.Errorf("mkfs: %w", err)
	}
	if p.Rootdir != "" {
		if err := copyin.RootdirProgress(dev, p.Rootdir, alg, p.RootdirProgress); err != nil {
			return fmt.Errorf("mkfs: --rootdir %s: %w", p.Rootdir, err)
		}
	}
	return nil
}

// treeOrder is the order trees take blocks from the metadata chunk.
func (im *image) treeOrder() []ondisk.ObjectID {
	ids := []ondisk.ObjectID{ondisk.RootTreeObjectID, ondisk.ExtentTreeObjectID, ondisk.DevTreeObjectID,
		ondisk.FSTreeObjectID, ondisk.CsumTreeObjectID, ondisk.UUIDTreeObjectID}
	if im.p.freeSpaceTree() {
		ids = append(ids, ondisk.FreeSpaceTreeObjectID)
	}
	if im.p.blockGroupTree() {
		ids = append(ids, ondisk.BlockGroupTreeObjectID)
	}
	return append(ids, ondisk.DataRelocTreeObjectID)
}

func (im *image) treeParams(id ondisk.ObjectID) TreeParams {
	return TreeParams{Owner: id, Generation: im.p.generation, NodeSize: im.p.NodeSize,
		FSID: im.p.FSID, ChunkTreeUUID: im.p.ChunkTreeUUID, Csum: im.p.Csum}
}

// reservation is where each tree's blocks go in one layout attempt.
type reservation struct {
	addrs map[ondisk.ObjectID][]ondisk.LogicalAddr
	used  map[ondisk.LogicalAddr][]ondisk.LogicalAddr // chunk logical -> tree blocks in it
}

// reserve gives the chunk tree blocks at the start of the system chunk and
// every other tree consecutive blocks from the start of the metadata chunk.
func (im *image) reserve(counts map[ondisk.ObjectID]int) (*reservation, error) {
	sys, meta := im.plan.find(ondisk.BlockGroupSystem), im.plan.find(ondisk.BlockGroupMetadata)
	if sys == nil || meta == nil {
		return nil, fmt.Errorf("chunk plan has no system or metadata chunk")
	}
	r := &reservation{addrs: map[ondisk.ObjectID][]ondisk.LogicalAddr{}, used: map[ondisk.LogicalAddr][]ondisk.LogicalAddr{}}
	take := func(a *blockAlloc, id ondisk.ObjectID) error {
		addrs, err := a.reserve(counts[id])
		if err != nil {
			return fmt.Errorf("tree %s: %w", ondisk.TreeName(id), err)
		}
		r.addrs[id] = addrs
		r.used[a.c.Logical] = append(r.used[a.c.Logical], addrs...)
		return nil
	}
	if err := take(newBlockAlloc(sys, im.p.NodeSize), ondisk.ChunkTreeObjectID); err != nil {
		return nil, err
	}
	ma := newBlockAlloc(meta, im.p.NodeSize)
	for _, id := range im.treeOrder() {
		if err := take(ma, id); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// layout builds every tree. The extent tree lists every tree block (its own
// too), the root tree points at the extent tree, and the free space tree
// and block group items depend on which blocks are used, so it reserves
// block counts, builds, and repeats with the counts and extent tree shape
// it found until nothing changes (two or three rounds).
func (im *image) layout() error {
	counts := map[ondisk.ObjectID]int{ondisk.ChunkTreeObjectID: 1}
	for _, id := range im.treeOrder() {
		counts[id] = 1
	}
	var prevExtent *Tree
	for round := 0; round < 32; round++ {
		r, err := im.reserve(counts)
		if err != nil {
			return err
		}
		if prevExtent == nil || !slices.Equal(blockAddrs(prevExtent), r.addrs[ondisk.ExtentTreeObjectID]) {
			prevExtent = placeholderTree(ondisk.ExtentTreeObjectID, r.addrs[ondisk.ExtentTreeObjectID])
		}
		trees, err := im.buildAll(r, prevExtent)
		var more errNeedMore
		if errors.As(err, &more) {
			counts[more.tree] = more.need
			continue
		}
		if err != nil {
			return err
		}
		changed := false
		for id, t := range trees {
			if len(t.Blocks) != counts[id] {
				counts[id], changed = len(t.Blocks), true
			}
		}
		if !changed && sameShape(prevExtent, trees[ondisk.ExtentTreeObjectID]) {
			im.trees = trees
			return nil
		}
		prevExtent = trees[ondisk.ExtentTreeObjectID]
	}
	return fmt.Errorf("layout did not settle (programmer bug)")
}

// buildAll builds every tree in reserved blocks; ext is the extent tree's
// shape as last built, which the root tree and the extent items refer to.
func (im *image) buildAll(r *reservation, ext *Tree) (map[ondisk.ObjectID]*Tree, error) {
	trees := map[ondisk.ObjectID]*Tree{}
	build := func(id ondisk.ObjectID, items []Item) error {
		need, err := CountBlocks(im.p.NodeSize, items)
		if err != nil {
			return fmt.Errorf("tree %s: %w", ondisk.TreeName(id), err)
		}
		if need > len(r.addrs[id]) {
			return errNeedMore{id, need}
		}
		t, err := BuildTree(im.treeParams(id), items, fromList(id, r.addrs[id]))
		if err != nil {
			return err
		}
		trees[id] = t
		return nil
	}
	type treeItems struct {
		id    ondisk.ObjectID
		items []Item
	}
	simple := []treeItems{
		{ondisk.ChunkTreeObjectID, im.chunkTreeItems()},
		{ondisk.DevTreeObjectID, im.devTreeItems()},
		{ondisk.FSTreeObjectID, im.rootDirItems(false)},
		{ondisk.CsumTreeObjectID, nil},
		{ondisk.UUIDTreeObjectID, im.uuidTreeItems()},
		{ondisk.DataRelocTreeObjectID, im.rootDirItems(true)},
	}
	if im.p.freeSpaceTree() {
		simple = append(simple, treeItems{ondisk.FreeSpaceTreeObjectID, im.freeSpaceTreeItems(r.used)})
	}
	if im.p.blockGroupTree() {
		simple = append(simple, treeItems{ondisk.BlockGroupTreeObjectID, im.blockGroupItems(r.used)})
	}
	for _, s := range simple {
		if err := build(s.id, s.items); err != nil {
			return nil, err
		}
	}
	trees[ondisk.ExtentTreeObjectID] = ext
	if err := build(ondisk.RootTreeObjectID, im.rootTreeItems(trees)); err != nil {
		return nil, err
	}
	var blocks []Block
	for _, t := range trees {
		blocks = append(blocks, t.Blocks...)
	}
	if err := build(ondisk.ExtentTreeObjectID, im.extentTreeItems(blocks, r.used)); err != nil {
		return nil, err
	}
	return trees, nil
}

// placeholderTree guesses a tree of single-level blocks at addrs, for the
// first round of layout.
func placeholderTree(id ondisk.ObjectID, addrs []ondisk.LogicalAddr) *Tree {
	t := &Tree{Root: addrs[len(addrs)-1]}
	for _, a := range addrs {
		t.Blocks = append(t.Blocks, Block{Addr: a, Owner: id})
	}
	return t
}

func blockAddrs(t *Tree) []ondisk.LogicalAddr {
	var out []ondisk.LogicalAddr
	for _, b := range t.Blocks {
		out = append(out, b.Addr)
	}
	return out
}

// sameShape compares what other trees record about a tree: its root and
// the address, level and first key of each block.
func sameShape(a, b *Tree) bool {
	if a.Root != b.Root || a.Level != b.Level || len(a.Blocks) != len(b.Blocks) {
		return false
	}
	for i := range a.Blocks {
		x, y := a.Blocks[i], b.Blocks[i]
		if x.Addr != y.Addr || x.Level != y.Level || x.FirstKey != y.FirstKey {
			return false
		}
	}
	return true
}
