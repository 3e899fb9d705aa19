package mkfs

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// The items of each tree of an empty filesystem, as mkfs.btrfs leaves them.

const modeDir0755 = item.SIFDIR | 0o755

// chunkTreeItems: the device item and one CHUNK_ITEM per chunk.
func (im *image) chunkTreeItems() []Item {
	dev := im.devItem()
	d := make([]byte, ondisk.DevItemSize)
	dev.Encode(d)
	items := []Item{{Key: ondisk.Key{ObjectID: ondisk.DevItemsObjectID, Type: ondisk.DevItemKey, Offset: 1}, Data: d}}
	for i := range im.plan.chunks {
		items = append(items, chunkTreeItem(&im.plan.chunks[i], im.p.SectorSize, im.p.DevUUID))
	}
	return items
}

// devItem describes device 1; the superblock carries a copy.
func (im *image) devItem() ondisk.DevItem {
	return ondisk.DevItem{
		DevID: 1, TotalBytes: im.p.totalBytes, BytesUsed: im.plan.bytesUsed(),
		IOAlign: im.p.SectorSize, IOWidth: im.p.SectorSize, SectorSize: im.p.SectorSize,
		UUID: im.p.DevUUID, FSID: im.p.FSID,
	}
}

// devTreeItems: one DEV_EXTENT per chunk stripe.
func (im *image) devTreeItems() []Item {
	var items []Item
	for _, e := range im.plan.extents {
		items = append(items, devExtentItem(e, im.p.ChunkTreeUUID))
	}
	return items
}

// rootDirItems: inode 256 of a subvolume, a directory whose ".." is itself.
// mirrors btrfs_make_root_dir (FS tree) and create_data_reloc_tree
func (im *image) rootDirItems(dataReloc bool) []Item {
	ts := item.TimespecOf(im.p.Time)
	ino := item.InodeItem{Generation: uint64(im.p.generation), NLink: 1, Mode: modeDir0755,
		Atime: ts, Ctime: ts, Mtime: ts, Otime: ts}
	if dataReloc {
		ino.Otime = item.Timespec{} // btrfs_new_inode leaves otime unset
	} else {
		ino.NBytes = uint64(im.p.NodeSize)
	}
	dir := ondisk.FirstFreeObjectID
	return []Item{
		{Key: ondisk.Key{ObjectID: dir, Type: ondisk.InodeItemKey}, Data: ino.Bytes()},
		inodeRef(dir, dir, 0, ".."),
	}
}

// uuidTreeItems: the FS tree's uuid.
func (im *image) uuidTreeItems() []Item {
	return []Item{uuidItem(im.p.SubvolUUID, ondisk.UUIDKeySubvol, ondisk.FSTreeObjectID)}
}

// freeSpaceTreeItems: the free space of every block group.
func (im *image) freeSpaceTreeItems(used map[ondisk.LogicalAddr][]ondisk.LogicalAddr) []Item {
	var items []Item
	for i := range im.plan.chunks {
		c := &im.plan.chunks[i]
		items = append(items, freeSpaceItems(c, used[c.Logical], im.p.NodeSize)...)
	}
	return items
}

// blockGroupItems: one BLOCK_GROUP_ITEM per chunk, used counting its tree blocks.
func (im *image) blockGroupItems(used map[ondisk.LogicalAddr][]ondisk.LogicalAddr) []Item {
	var items []Item
	for i := range im.plan.chunks {
		c := &im.plan.chunks[i]
		items = append(items, blockGroupItem(c, uint64(len(used[c.Logical]))*uint64(im.p.NodeSize)))
	}
	return items
}

// extentTreeItems: a METADATA_ITEM (or EXTENT_ITEM) per tree block, and the
// block group items unless the block group tree holds them.
func (im *image) extentTreeItems(blocks []Block, used map[ondisk.LogicalAddr][]ondisk.LogicalAddr) []Item {
	var items []Item
	for i := range blocks {
		items = append(items, metadataExtentItem(&blocks[i], im.p.NodeSize, im.p.generation, im.p.skinny()))
	}
	if !im.p.blockGroupTree() {
		items = append(items, im.blockGroupItems(used)...)
	}
	return items
}

// rootTreeItems: a ROOT_ITEM per tree, and the root tree directory (inode 6)
// whose "default" entry names the FS tree. mirrors make_root_dir
func (im *image) rootTreeItems(roots map[ondisk.ObjectID]*Tree) []Item {
	var items []Item
	for id, t := range roots {
		if id == ondisk.RootTreeObjectID || id == ondisk.ChunkTreeObjectID {
			continue
		}
		ri := im.rootItem(id, t)
		items = append(items, Item{Key: ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey}, Data: ri.Bytes()})
	}
	ts := item.TimespecOf(im.p.Time)
	dirIno := item.InodeItem{Generation: uint64(im.p.generation), NLink: 1, NBytes: uint64(im.p.NodeSize),
		Mode: modeDir0755, Atime: ts, Ctime: ts, Mtime: ts, Otime: ts}
	fsRoot := ondisk.Key{ObjectID: ondisk.FSTreeObjectID, Type: ondisk.RootItemKey, Offset: ^uint64(0)}
	return append(items,
		Item{Key: ondisk.Key{ObjectID: ondisk.RootTreeDirObjectID, Type: ondisk.InodeItemKey}, Data: dirIno.Bytes()},
		inodeRef(ondisk.RootTreeDirObjectID, ondisk.RootTreeDirObjectID, 0, ".."),
		dirItem(ondisk.RootTreeDirObjectID, "default", fsRoot, item.FTDir),
		inodeRef(ondisk.FSTreeObjectID, ondisk.RootTreeDirObjectID, 0, "default"),
	)
}

// rootItem is the ROOT_ITEM of tree id. Trees made by make_btrfs carry a
// directory inode in their root item; the uuid and data reloc trees, made
// later by btrfs_create_tree, carry a zeroed one.
func (im *image) rootItem(id ondisk.ObjectID, t *Tree) item.RootItem {
	gen := im.p.generation
	ri := item.RootItem{
		Generation: gen, GenerationV2: gen, Bytenr: t.Root, Level: uint8(t.Level), Refs: 1,
		BytesUsed: uint64(len(t.Blocks)) * uint64(im.p.NodeSize),
	}
	if id != ondisk.UUIDTreeObjectID && id != ondisk.DataRelocTreeObjectID {
		ri.Inode = item.InodeItem{Generation: 1, Size: 3, NLink: 1, NBytes: uint64(im.p.NodeSize), Mode: modeDir0755}
	}
	switch id {
	case ondisk.FSTreeObjectID:
		ri.RootDirID = ondisk.FirstFreeObjectID
		ri.UUID = im.p.SubvolUUID
		ts := item.TimespecOf(im.p.Time)
		ri.Ctime, ri.Otime = ts, ts
	case ondisk.DataRelocTreeObjectID:
		ri.RootDirID = ondisk.FirstFreeObjectID
	}
	return ri
}
