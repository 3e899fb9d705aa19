package blockgroup

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/freespace"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Trees gives this package the writable trees of the running transaction.
type Trees interface {
	Tree(id ondisk.ObjectID) (*ctree.Tree, error)
	Alloc() ctree.Allocator
}

// ItemKey is the key of g's BLOCK_GROUP_ITEM.
func (g *Group) ItemKey() ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.ObjectID(g.Start), Type: ondisk.BlockGroupItemKey, Offset: g.Length}
}

func (m *Manager) itemBytes(g *Group) []byte {
	m.mu.Lock()
	bi := item.BlockGroupItem{Used: g.used, ChunkObjectID: ondisk.FirstChunkTreeObjectID, Flags: g.Flags}
	m.mu.Unlock()
	return bi.Bytes()
}

// PendingConfig says where CreatePending puts things.
type PendingConfig struct {
	BlockGroupTree ondisk.ObjectID // extent tree or block group tree
	ChunkTreeUUID  ondisk.UUID
	Super          *ondisk.Superblock // gets dev_item and, for SYSTEM chunks, sys_chunk_array
}

// CreatePending inserts the on-disk records of the groups AllocChunk made:
// the CHUNK_ITEM and updated DEV_ITEM in the chunk tree, the DEV_EXTENTs, the
// BLOCK_GROUP_ITEM, and for SYSTEM chunks the superblock's sys_chunk_array.
// The free space info is added lazily (see FreeSpace). It returns how many
// groups it created. mirrors btrfs_chunk_alloc_add_chunk_item + btrfs_create_pending_block_groups
func (m *Manager) CreatePending(tr Trees, cfg PendingConfig) (int, error) {
	pending := m.TakePending()
	for _, g := range pending {
		if err := m.createOne(tr, cfg, g); err != nil {
			return 0, fmt.Errorf("create block group %d+%d: %w", uint64(g.Start), g.Length, err)
		}
	}
	return len(pending), nil
}

func (m *Manager) createOne(tr Trees, cfg PendingConfig, g *Group) error {
	a := tr.Alloc()
	chunkTree, err := tr.Tree(ondisk.ChunkTreeObjectID)
	if err != nil {
		return err
	}
	ck := ondisk.Key{ObjectID: ondisk.FirstChunkTreeObjectID, Type: ondisk.ChunkItemKey, Offset: uint64(g.Start)}
	if err := chunkTree.InsertItem(a, ck, item.ChunkItemBytes(&g.Chunk)); err != nil {
		return fmt.Errorf("insert chunk item: %w", err)
	}
	di := m.dev.DevItem()
	dk := ondisk.Key{ObjectID: ondisk.DevItemsObjectID, Type: ondisk.DevItemKey, Offset: uint64(di.DevID)}
	if err := chunkTree.UpdateItem(a, dk, item.DevItemBytes(&di)); err != nil {
		return fmt.Errorf("update dev item: %w", err)
	}
	cfg.Super.DevItem.BytesUsed = di.BytesUsed
	devTree, err := tr.Tree(ondisk.DevTreeObjectID)
	if err != nil {
		return err
	}
	for _, s := range g.Chunk.Stripes {
		de := item.DevExtent{ChunkTree: ondisk.ChunkTreeObjectID, ChunkObjectID: ondisk.FirstChunkTreeObjectID,
			ChunkOffset: g.Start, Length: g.Chunk.Length, ChunkTreeUUID: cfg.ChunkTreeUUID}
		k := ondisk.Key{ObjectID: ondisk.ObjectID(s.DevID), Type: ondisk.DevExtentKey, Offset: uint64(s.Offset)}
		if err := devTree.InsertItem(a, k, de.Bytes()); err != nil {
			return fmt.Errorf("insert dev extent %v: %w", k, err)
		}
	}
	bgTree, err := tr.Tree(cfg.BlockGroupTree)
	if err != nil {
		return err
	}
	if err := bgTree.InsertItem(a, g.ItemKey(), m.itemBytes(g)); err != nil {
		return fmt.Errorf("insert block group item: %w", err)
	}
	if g.Flags&ondisk.BlockGroupSystem != 0 {
		sys, err := cfg.Super.SysChunks()
		if err != nil {
			return err
		}
		sys = append(sys, ondisk.SysChunk{Key: ck, Chunk: g.Chunk})
		if err := cfg.Super.SetSysChunks(sys); err != nil {
			return err
		}
	}
	return nil
}

// WriteDirty rewrites the BLOCK_GROUP_ITEM of every group whose used bytes
// changed. It returns how many it wrote. mirrors btrfs_write_dirty_block_groups
func (m *Manager) WriteDirty(tr Trees, bgTreeID ondisk.ObjectID) (int, error) {
	dirty := m.TakeDirty()
	if len(dirty) == 0 {
		return 0, nil
	}
	t, err := tr.Tree(bgTreeID)
	if err != nil {
		return 0, err
	}
	for _, g := range dirty {
		if err := t.UpdateItem(tr.Alloc(), g.ItemKey(), m.itemBytes(g)); err != nil {
			return 0, fmt.Errorf("update block group item %v: %w", g.ItemKey(), err)
		}
	}
	return len(dirty), nil
}

// FreeSpace records free space changes in the free space tree, adding a
// group's FREE_SPACE_INFO first when it is new.
type FreeSpace struct {
	M      *Manager
	Editor freespace.Editor
}

func (f FreeSpace) group(a ondisk.LogicalAddr, n uint64) (*Group, freespace.BlockGroup, error) {
	g := f.M.Lookup(a)
	if g == nil || a+ondisk.LogicalAddr(n) > g.End() {
		return nil, freespace.BlockGroup{}, fmt.Errorf("free space tree: %d+%d not in a block group", uint64(a), n)
	}
	bg := freespace.BlockGroup{Start: g.Start, Length: g.Length}
	if f.M.NeedsFST(g) {
		if err := freespace.AddBlockGroup(f.Editor, bg, f.M.sectorSize); err != nil {
			return nil, bg, err
		}
	}
	return g, bg, nil
}

// Remove records [a, a+n) as allocated. mirrors remove_from_free_space_tree
func (f FreeSpace) Remove(a ondisk.LogicalAddr, n uint64) error {
	_, bg, err := f.group(a, n)
	if err != nil {
		return err
	}
	return freespace.RemoveFree(f.Editor, bg, a, n, f.M.sectorSize)
}

// Add records [a, a+n) as free. mirrors add_to_free_space_tree
func (f FreeSpace) Add(a ondisk.LogicalAddr, n uint64) error {
	_, bg, err := f.group(a, n)
	if err != nil {
		return err
	}
	return freespace.AddFree(f.Editor, bg, a, n, f.M.sectorSize)
}

// AddNewGroups adds the FREE_SPACE_INFO (and one free extent) of every group
// that has none yet. mirrors add_block_group_free_space
func (f FreeSpace) AddNewGroups() error {
	for _, g := range f.M.TakeNeedsFST() {
		bg := freespace.BlockGroup{Start: g.Start, Length: g.Length}
		if err := freespace.AddBlockGroup(f.Editor, bg, f.M.sectorSize); err != nil {
			return err
		}
	}
	return nil
}

// TreeEditor adapts a tree of the running transaction to freespace.Editor.
type TreeEditor struct {
	T *ctree.Tree
	A ctree.Allocator
}

func (e TreeEditor) Range(min, max ondisk.Key, fn func(ondisk.Key, []byte) bool) error {
	return e.T.Range(min, max, fn)
}
func (e TreeEditor) Insert(k ondisk.Key, data []byte) error { return e.T.InsertItem(e.A, k, data) }
func (e TreeEditor) Delete(k ondisk.Key) error              { return e.T.DeleteItem(e.A, k) }
func (e TreeEditor) Update(k ondisk.Key, data []byte) error { return e.T.UpdateItem(e.A, k, data) }
