package blockgroup

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/freespace"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// LoadConfig is what Load reads.
type LoadConfig struct {
	Super  *ondisk.Superblock
	Chunks *volume.ChunkMap
	// BlockGroupTree holds the BLOCK_GROUP_ITEMs: the block group tree when
	// that feature is on, else the extent tree.
	BlockGroupTree *ctree.Tree
	ExtentTree     *ctree.Tree
	// FreeSpaceTree is nil when the filesystem has no (valid) free space
	// tree; free space is then derived from the extent tree.
	FreeSpaceTree *ctree.Tree
	DevTree       *ctree.Tree
}

// Load builds the block groups from every chunk's BLOCK_GROUP_ITEM and their
// free space from the free space tree, or without one from the gaps between
// extent items. It checks that each group's used bytes, free space and
// superblock stripes add up to its length. mirrors btrfs_read_block_groups + caching_thread
func Load(c LoadConfig) (*Manager, error) {
	sb := c.Super
	dev := NewDeviceSpace(sb.DevItem)
	if err := loadDevExtents(dev, c.DevTree); err != nil {
		return nil, err
	}
	m := NewManager(sb.SectorSize, sb.NodeSize, dev)
	for _, mp := range c.Chunks.All() {
		g, err := m.loadGroup(c, mp)
		if err != nil {
			return nil, err
		}
		if err := m.add(g); err != nil {
			return nil, err
		}
		m.bytesUsed += g.used
	}
	return m, nil
}

func loadDevExtents(dev *DeviceSpace, t *ctree.Tree) error {
	id := ondisk.ObjectID(dev.Item.DevID)
	min := ondisk.Key{ObjectID: id, Type: ondisk.DevExtentKey}
	max := ondisk.Key{ObjectID: id, Type: ondisk.DevExtentKey, Offset: ^uint64(0)}
	var derr error
	err := t.Range(min, max, func(k ondisk.Key, data []byte) bool {
		de, err := item.DecodeDevExtent(data)
		if err != nil {
			derr = fmt.Errorf("dev extent %v: %w", k, diskio.Corruptf("%w", err))
			return false
		}
		dev.AddExtent(ondisk.PhysicalAddr(k.Offset), de.Length)
		return true
	})
	if err != nil {
		return fmt.Errorf("load dev extents: %w", err)
	}
	return derr
}

func (m *Manager) loadGroup(c LoadConfig, mp volume.Mapping) (*Group, error) {
	key := ondisk.Key{ObjectID: ondisk.ObjectID(mp.Logical), Type: ondisk.BlockGroupItemKey, Offset: mp.Chunk.Length}
	data, ok, err := c.BlockGroupTree.Lookup(key)
	if err != nil {
		return nil, fmt.Errorf("load block group %v: %w", key, err)
	}
	if !ok {
		return nil, fmt.Errorf("load block group %v: %w", key, diskio.Corruptf("chunk has no block group item"))
	}
	bi, err := item.DecodeBlockGroupItem(data)
	if err != nil {
		return nil, fmt.Errorf("load block group %v: %w", key, diskio.Corruptf("%w", err))
	}
	if bi.Flags != mp.Chunk.Type {
		return nil, fmt.Errorf("load block group %v: %w", key,
			diskio.Corruptf("flags %#x differ from the chunk's %#x", bi.Flags, mp.Chunk.Type))
	}
	g, err := m.newGroup(mp.Logical, mp.Chunk)
	if err != nil {
		return nil, err
	}
	g.used = bi.Used
	if c.FreeSpaceTree != nil {
		err = m.loadFromFST(g, c.FreeSpaceTree)
	} else {
		err = m.loadFromExtents(g, c.ExtentTree)
	}
	if err != nil {
		return nil, err
	}
	if err := g.check(); err != nil {
		return nil, fmt.Errorf("load block group %v: %w", key, diskio.Corruptf("%w", err))
	}
	return g, nil
}

// loadFromFST replaces the group's free space by what the free space tree
// records (superblock stripes stay excluded). mirrors load_free_space_tree
func (m *Manager) loadFromFST(g *Group, t *ctree.Tree) error {
	bg := freespace.BlockGroup{Start: g.Start, Length: g.Length}
	exts, err := freespace.Load(ReadOnlyEditor{t}, bg, m.sectorSize)
	if err != nil {
		return fmt.Errorf("load free space of block group %d: %w", uint64(g.Start), err)
	}
	g.free = RangeSet{}
	for _, x := range exts {
		if x.Start < g.Start || x.End() > g.End() {
			return fmt.Errorf("load free space of block group %d: %w", uint64(g.Start),
				diskio.Corruptf("free extent %d+%d outside the group", uint64(x.Start), x.Length))
		}
		g.free.Add(uint64(x.Start), x.Length)
	}
	// The tree may list superblock stripes as free (the kernel adds whole
	// new groups to it); they never are.
	for _, r := range g.superR {
		g.free.Remove(r.Start, r.Len())
	}
	return nil
}

// loadFromExtents takes every extent item inside the group out of its free
// space. mirrors load_extent_tree_free
func (m *Manager) loadFromExtents(g *Group, t *ctree.Tree) error {
	min := ondisk.Key{ObjectID: ondisk.ObjectID(g.Start)}
	max := ondisk.Key{ObjectID: ondisk.ObjectID(g.End() - 1), Type: 0xff, Offset: ^uint64(0)}
	err := t.Range(min, max, func(k ondisk.Key, _ []byte) bool {
		switch k.Type {
		case ondisk.ExtentItemKey:
			g.free.Remove(uint64(k.ObjectID), k.Offset)
		case ondisk.MetadataItemKey:
			g.free.Remove(uint64(k.ObjectID), uint64(m.nodeSize))
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("load free space of block group %d from the extent tree: %w", uint64(g.Start), err)
	}
	return nil
}

// ReadOnlyEditor lets freespace.Load read a tree; writes fail.
type ReadOnlyEditor struct{ T *ctree.Tree }

func (e ReadOnlyEditor) Range(min, max ondisk.Key, fn func(ondisk.Key, []byte) bool) error {
	return e.T.Range(min, max, fn)
}
func (e ReadOnlyEditor) Insert(ondisk.Key, []byte) error { return errReadOnly }
func (e ReadOnlyEditor) Delete(ondisk.Key) error         { return errReadOnly }
func (e ReadOnlyEditor) Update(ondisk.Key, []byte) error { return errReadOnly }

var errReadOnly = fmt.Errorf("free space tree opened read-only")
