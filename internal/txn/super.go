package txn

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// rootOf returns the current root, level and root block generation of tree
// id (from the running transaction if it has the tree, else its ROOT_ITEM).
func (f *Engine) rootOf(id ondisk.ObjectID) (ondisk.LogicalAddr, int, ondisk.Generation, bool) {
	if ts := f.trees[id]; ts != nil {
		return ts.t.Root, ts.t.Level, ts.t.Gen, true
	}
	if id == ondisk.RootTreeObjectID {
		rt := f.Info.RootTree
		return rt.Root, rt.Level, rt.Gen, true
	}
	ri, _, err := f.Info.RootItem(id)
	if err != nil {
		return 0, 0, 0, false
	}
	return ri.Bytenr, int(ri.Level), ri.Generation, true
}

// newSuper fills in the superblock of the commit. mirrors update_super_roots
func (f *Engine) newSuper() (*ondisk.Superblock, error) {
	sb := f.super
	prevGen := f.Info.Super.Generation
	root, level, _, _ := f.rootOf(ondisk.RootTreeObjectID)
	sb.Generation = f.transid
	sb.Root, sb.RootLevel = root, uint8(level)
	if ts := f.trees[ondisk.ChunkTreeObjectID]; ts != nil {
		sb.ChunkRoot, sb.ChunkRootLevel, sb.ChunkRootGeneration = ts.t.Root, uint8(ts.t.Level), ts.t.Gen
	}
	sb.BytesUsed = f.groups.BytesUsed()
	di := f.groups.Device().DevItem()
	sb.DevItem.BytesUsed = di.BytesUsed
	if sb.UUIDTreeGeneration == uint64(prevGen) && prevGen != 0 {
		// The uuid tree was up to date; the writer keeps it so.
		sb.UUIDTreeGeneration = uint64(f.transid)
	}
	if _, _, _, ok := f.rootOf(ondisk.RootTreeObjectID); !ok || sb.Root == 0 {
		return nil, fmt.Errorf("no root tree root")
	}
	f.backupRoots(sb, prevGen)
	return sb, nil
}

// backupRoots records the new roots in the next backup slot: the one after
// the slot of the previous generation, or that slot again when it already
// holds this root tree generation. mirrors backup_super_roots
func (f *Engine) backupRoots(sb *ondisk.Superblock, prevGen ondisk.Generation) {
	next := 0
	for i := range sb.BackupRoots {
		if sb.BackupRoots[i].TreeRootGen == uint64(prevGen) && prevGen != 0 {
			next = (i + 1) % ondisk.NumBackupRoots
		}
	}
	rootAddr, rootLevel, rootGen, _ := f.rootOf(ondisk.RootTreeObjectID)
	last := (next + ondisk.NumBackupRoots - 1) % ondisk.NumBackupRoots
	if sb.BackupRoots[last].TreeRootGen == uint64(rootGen) {
		next = last
	}
	b := &sb.BackupRoots[next]
	*b = ondisk.BackupRoot{}
	b.TreeRoot, b.TreeRootGen, b.TreeRootLevel = uint64(rootAddr), uint64(rootGen), uint8(rootLevel)
	b.ChunkRoot, b.ChunkRootGen, b.ChunkRootLevel = uint64(sb.ChunkRoot), uint64(sb.ChunkRootGeneration), sb.ChunkRootLevel
	set := func(id ondisk.ObjectID, addr, gen *uint64, lvl *uint8) {
		if a, l, g, ok := f.rootOf(id); ok {
			*addr, *gen, *lvl = uint64(a), uint64(g), uint8(l)
		}
	}
	set(ondisk.ExtentTreeObjectID, &b.ExtentRoot, &b.ExtentRootGen, &b.ExtentRootLevel)
	set(ondisk.FSTreeObjectID, &b.FSRoot, &b.FSRootGen, &b.FSRootLevel)
	set(ondisk.DevTreeObjectID, &b.DevRoot, &b.DevRootGen, &b.DevRootLevel)
	set(ondisk.CsumTreeObjectID, &b.CsumRoot, &b.CsumRootGen, &b.CsumRootLevel)
	b.TotalBytes, b.BytesUsed, b.NumDevices = sb.TotalBytes, sb.BytesUsed, sb.NumDevices
}

// writeSupers writes sb to the primary superblock and every mirror that
// lies inside the device. mirrors write_dev_supers
func (f *Engine) writeSupers(sb *ondisk.Superblock) error {
	total := min(uint64(f.Info.Dev.Size()), sb.DevItem.TotalBytes)
	defer func() { sb.Bytenr = ondisk.SuperMirrorOffsets[0] }()
	for i, off := range ondisk.SuperMirrorOffsets {
		if i > 0 && uint64(off)+ondisk.SuperInfoSize >= total {
			break
		}
		sb.Bytenr = off
		b := sb.Encode()
		f.Info.Csum.SetBlock(b)
		if _, err := f.Info.Dev.WriteAt(b, int64(off)); err != nil {
			return fmt.Errorf("superblock at %d: %w", off, err)
		}
	}
	return nil
}
