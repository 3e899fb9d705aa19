package mkfs

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// superblock fills in the superblock of the laid-out image (bytenr and
// checksum are set per copy when it is written).
func (im *image) superblock() (*ondisk.Superblock, error) {
	p := im.p
	root, chunkRoot := im.trees[ondisk.RootTreeObjectID], im.trees[ondisk.ChunkTreeObjectID]
	sb := &ondisk.Superblock{
		FSID: p.FSID, Flags: ondisk.HeaderFlagWritten, Magic: ondisk.SuperMagic,
		Generation: p.generation, Root: root.Root, ChunkRoot: chunkRoot.Root,
		TotalBytes: p.totalBytes, BytesUsed: im.bytesUsed(), RootDirObjectID: ondisk.RootTreeDirObjectID,
		NumDevices: 1, SectorSize: p.SectorSize, NodeSize: p.NodeSize, LeafSize: p.NodeSize,
		StripeSize: p.SectorSize, ChunkRootGeneration: p.generation,
		CompatROFlags: p.Features.CompatRO, IncompatFlags: p.Features.Incompat, CsumType: uint16(p.Csum),
		RootLevel: uint8(root.Level), ChunkRootLevel: uint8(chunkRoot.Level), DevItem: im.devItem(),
		// The uuid tree is complete, so the kernel need not rescan it.
		UUIDTreeGeneration: uint64(p.generation),
	}
	// A free space tree replaces the v1 cache; without one, ~0 invalidates it.
	sb.CacheGeneration = ^uint64(0)
	if p.freeSpaceTree() {
		sb.CacheGeneration = 0
	}
	copy(sb.Label[:], p.Label)
	var sys []ondisk.SysChunk
	for i := range im.plan.chunks {
		c := &im.plan.chunks[i]
		if c.Type&ondisk.BlockGroupSystem != 0 {
			sys = append(sys, ondisk.SysChunk{Key: chunkKey(c), Chunk: chunkItem(c, p.SectorSize, p.DevUUID)})
		}
	}
	if err := sb.SetSysChunks(sys); err != nil {
		return nil, err
	}
	sb.BackupRoots[0] = im.backupRoot(sb)
	return sb, nil
}

// backupRoot records this (first) commit's roots, as the kernel does in
// the slot after the newest. mirrors backup_super_roots
func (im *image) backupRoot(sb *ondisk.Superblock) ondisk.BackupRoot {
	gen := uint64(im.p.generation)
	t := func(id ondisk.ObjectID) (uint64, uint8) {
		tr := im.trees[id]
		return uint64(tr.Root), uint8(tr.Level)
	}
	var b ondisk.BackupRoot
	b.TreeRoot, b.TreeRootLevel = t(ondisk.RootTreeObjectID)
	b.ChunkRoot, b.ChunkRootLevel = t(ondisk.ChunkTreeObjectID)
	b.ExtentRoot, b.ExtentRootLevel = t(ondisk.ExtentTreeObjectID)
	b.FSRoot, b.FSRootLevel = t(ondisk.FSTreeObjectID)
	b.DevRoot, b.DevRootLevel = t(ondisk.DevTreeObjectID)
	b.CsumRoot, b.CsumRootLevel = t(ondisk.CsumTreeObjectID)
	b.TreeRootGen, b.ChunkRootGen, b.ExtentRootGen, b.FSRootGen, b.DevRootGen, b.CsumRootGen =
		gen, gen, gen, gen, gen, gen
	b.TotalBytes, b.BytesUsed, b.NumDevices = sb.TotalBytes, sb.BytesUsed, 1
	return b
}

// bytesUsed is the space taken by tree blocks (no data yet).
func (im *image) bytesUsed() uint64 {
	n := 0
	for _, t := range im.trees {
		n += len(t.Blocks)
	}
	return uint64(n) * uint64(im.p.NodeSize)
}
