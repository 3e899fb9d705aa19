package print

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// TreeOptions are the options of `btrfs inspect-internal dump-tree`.
type TreeOptions struct {
	// Tree prints only this tree (-t); 0 prints all.
	Tree ondisk.ObjectID
	// Extents (-e) prints only the leaves of the extent and device trees.
	Extents bool
	// Device (-d) prints only the root, chunk and device trees.
	Device bool
	// Roots (-r) prints only where each tree's root is; Backups (-R) adds
	// the superblock's backup roots.
	Roots   bool
	Backups bool
	// UUID (-u) prints only the uuid tree.
	UUID bool
	// Blocks (-b) prints only these tree blocks; Follow also prints what is
	// below them.
	Blocks []ondisk.LogicalAddr
	Follow bool
	// DFS walks depth first instead of breadth first.
	DFS bool
	// HideNames replaces file and xattr names with HIDDEN.
	HideNames bool
	// CsumHeaders prints each block's stored checksum; CsumItems prints the
	// checksums in EXTENT_CSUM items.
	CsumHeaders bool
	CsumItems   bool
	// Warn receives what btrfs-progs prints on stderr (unreadable blocks and
	// the like); nil drops it.
	Warn func(string)
}

// DumpTree prints fs like `btrfs inspect-internal dump-tree` (without the
// "btrfs-progs vX" banner line). Blocks that cannot be read are reported
// through opts.Warn and skipped; the error is for failures that stop the dump.
// mirrors cmd_inspect_dump_tree
func DumpTree(out io.Writer, fs *fsinfo.FSInfo, opts TreeOptions) error {
	p := &printer{
		w: bufio.NewWriterSize(out, 1<<16), nodeSize: fs.Super.NodeSize,
		sectorSize: fs.Super.SectorSize, csumType: fs.Csum, hideNames: opts.HideNames,
		csumHeaders: opts.CsumHeaders, csumItems: opts.CsumItems, dfs: opts.DFS, warn: opts.Warn,
	}
	d := &dumper{p: p, fs: fs, opts: opts}
	err := d.run()
	if ferr := p.w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// PrintBlock prints one tree block as dump-tree -b does (no children).
func PrintBlock(out io.Writer, fs *fsinfo.FSInfo, n *diskio.Node) error {
	p := &printer{w: bufio.NewWriter(out), nodeSize: fs.Super.NodeSize,
		sectorSize: fs.Super.SectorSize, csumType: fs.Csum}
	p.printBlock(n)
	return p.w.Flush()
}

type dumper struct {
	p    *printer
	fs   *fsinfo.FSInfo
	opts TreeOptions
}

func (d *dumper) run() error {
	o := &d.opts
	if len(o.Blocks) > 0 {
		return d.blocks()
	}
	sb := d.fs.Super
	logTree, _ := d.fs.Tree(ondisk.TreeLogObjectID)
	if !(o.Extents || o.UUID || o.Tree != 0) {
		if o.Roots {
			d.rootLine("root tree", d.fs.RootTree)
			d.rootLine("chunk tree", d.fs.ChunkTree())
			if logTree != nil {
				d.rootLine("log root tree", logTree)
			}
		} else {
			d.whole("root tree", d.fs.RootTree)
			d.whole("chunk tree", d.fs.ChunkTree())
			if logTree != nil {
				d.whole("log root tree", logTree)
			}
		}
	}
	switch o.Tree {
	case ondisk.RootTreeObjectID:
		d.whole("root tree", d.fs.RootTree)
		return nil
	case ondisk.ChunkTreeObjectID:
		d.whole("chunk tree", d.fs.ChunkTree())
		return nil
	case ondisk.TreeLogObjectID:
		if logTree == nil {
			// btrfs-progs reports this and still exits 0.
			d.p.warnf("cannot print log root tree, invalid pointer")
			return nil
		}
		d.whole("log root tree", logTree)
		return nil
	case ondisk.BlockGroupTreeObjectID:
		t, err := d.fs.Tree(ondisk.BlockGroupTreeObjectID)
		if sb.CompatROFlags&ondisk.CompatROBlockGroupTree == 0 || err != nil {
			d.p.warnf("cannot print block group tree, invalid pointer")
			return nil
		}
		d.whole("block group tree", t)
		return nil
	}
	if err := d.scanRoots(d.fs.RootTree); err != nil {
		return err
	}
	if logTree != nil {
		if err := d.scanRoots(logTree); err != nil {
			return err
		}
	}
	if o.Extents || o.Device || o.UUID {
		return nil
	}
	if o.Backups {
		d.oldRoots()
	}
	d.p.printf("total bytes %d\n", sb.TotalBytes)
	d.p.printf("bytes used %d\n", sb.BytesUsed)
	d.p.printf("uuid %s\n", sb.FSID)
	return nil
}

// whole prints "title\n" and the tree from its root.
func (d *dumper) whole(title string, t *ctree.Tree) {
	root, err := d.readRoot(t, t.Level, t.Gen)
	if err != nil {
		d.p.warnf("%s: %v", title, err)
		return
	}
	d.p.printf("%s\n", title)
	d.p.printTree(t, root, true)
}

func (d *dumper) rootLine(title string, t *ctree.Tree) {
	root, err := d.readRoot(t, t.Level, t.Gen)
	if err != nil {
		d.p.warnf("%s: %v", title, err)
		return
	}
	d.p.printf("%s: %d level %d\n", title, uint64(root.Addr), root.Level())
}

func (d *dumper) readRoot(t *ctree.Tree, level int, gen ondisk.Generation) (*diskio.Node, error) {
	return d.fs.R.ReadNode(t.Root, diskio.Expect{Tree: t.ID, Level: level, Generation: gen})
}

// treeTitle is what dump-tree calls the tree with a ROOT_ITEM of objectid id.
func treeTitle(id ondisk.ObjectID) string {
	switch id {
	case ondisk.RootTreeObjectID:
		return "root"
	case ondisk.ExtentTreeObjectID:
		return "extent"
	case ondisk.ChunkTreeObjectID:
		return "chunk"
	case ondisk.DevTreeObjectID:
		return "device"
	case ondisk.FSTreeObjectID:
		return "fs"
	case ondisk.RootTreeDirObjectID:
		return "directory"
	case ondisk.CsumTreeObjectID:
		return "checksum"
	case ondisk.OrphanObjectID:
		return "orphan"
	case ondisk.TreeLogObjectID:
		return "log"
	case ondisk.TreeLogFixupObjectID:
		return "log fixup"
	case ondisk.TreeRelocObjectID:
		return "reloc"
	case ondisk.DataRelocTreeObjectID:
		return "data reloc"
	case ondisk.ExtentCsumObjectID:
		return "extent checksum"
	case ondisk.QuotaTreeObjectID:
		return "quota"
	case ondisk.UUIDTreeObjectID:
		return "uuid"
	case ondisk.FreeSpaceTreeObjectID:
		return "free space"
	case ondisk.MultipleObjectID:
		return "multiple"
	case ondisk.BlockGroupTreeObjectID:
		return "block group"
	}
	return "file"
}

// skip mirrors dump-tree's per-tree filter for -e, -d and -u.
func (d *dumper) skip(id ondisk.ObjectID) bool {
	o := &d.opts
	skip := o.Extents || o.Device || o.UUID
	switch id {
	case ondisk.ExtentTreeObjectID:
		if !o.Device && !o.UUID {
			skip = false
		}
	case ondisk.DevTreeObjectID:
		if !o.UUID {
			skip = false
		}
	case ondisk.RootTreeDirObjectID:
		skip = false
	case ondisk.UUIDTreeObjectID:
		if !o.Extents && !o.Device {
			skip = false
		}
	}
	return skip
}

// scanRoots prints every tree that has a ROOT_ITEM in rootTree (the root
// tree, then the log root tree), in key order.
func (d *dumper) scanRoots(rootTree *ctree.Tree) error {
	path, ok, err := rootTree.SearchForward(ondisk.Key{Type: ondisk.RootItemKey})
	for ; err == nil && ok; ok, err = path.Next() {
		k := path.Key()
		if k.Type != ondisk.RootItemKey {
			continue
		}
		b := make([]byte, item.RootItemSize)
		copy(b, path.Data())
		ri, _ := item.DecodeRootItem(b)
		t := &ctree.Tree{R: d.fs.R, ID: k.ObjectID, Root: ri.Bytenr, Level: int(ri.Level)}
		if k.ObjectID == ondisk.TreeLogObjectID {
			t.ID = ondisk.TreeLogObjectID
		}
		// btrfs-progs reads the block with no expectations (generation 0)
		// and skips trees whose root cannot be read.
		root, rerr := d.fs.R.ReadNode(ri.Bytenr, diskio.Expect{Tree: t.ID, Level: -1})
		if rerr != nil {
			d.p.warnf("tree %s: %v", KeyString(k), rerr)
			continue
		}
		t.Level = root.Level()
		if d.opts.Tree != 0 && k.ObjectID != d.opts.Tree {
			continue
		}
		if d.skip(k.ObjectID) {
			continue
		}
		title := treeTitle(k.ObjectID) + " tree key " + KeyString(k)
		switch {
		case d.opts.Extents:
			d.p.printf("%s\n", title)
			d.p.printExtentsOnly(t, root)
		case d.opts.Roots:
			d.p.printf("%s %d level %d\n", title, uint64(root.Addr), root.Level())
		default:
			d.p.printf("%s \n", title)
			d.p.printTree(t, root, true)
		}
	}
	if err != nil {
		return fmt.Errorf("cannot read ROOT_ITEM from tree %s: %w", ondisk.TreeName(rootTree.ID), err)
	}
	return nil
}

// oldRoots mirrors print_old_roots (dump-tree -R).
func (d *dumper) oldRoots() {
	sb := d.fs.Super
	extentName := "extent root"
	if sb.IncompatFlags&ondisk.IncompatExtentTreeV2 != 0 {
		extentName = "block group root"
	}
	for i := range sb.BackupRoots {
		b := &sb.BackupRoots[i]
		d.p.printf("btrfs root backup slot %d\n", i)
		d.p.printf("\ttree root gen %d block %d\n", b.TreeRootGen, b.TreeRoot)
		d.p.printf("\t\t%s gen %d block %d\n", extentName, b.ExtentRootGen, b.ExtentRoot)
		d.p.printf("\t\tchunk root gen %d block %d\n", b.ChunkRootGen, b.ChunkRoot)
		d.p.printf("\t\tdevice root gen %d block %d\n", b.DevRootGen, b.DevRoot)
		d.p.printf("\t\tcsum root gen %d block %d\n", b.CsumRootGen, b.CsumRoot)
		d.p.printf("\t\tfs root gen %d block %d\n", b.FSRootGen, b.FSRoot)
		d.p.printf("\t\t%d used %d total %d devices\n", b.BytesUsed, b.TotalBytes, b.NumDevices)
	}
}

// blocks mirrors dump_print_tree_blocks: each distinct block in address order.
func (d *dumper) blocks() error {
	addrs := append([]ondisk.LogicalAddr(nil), d.opts.Blocks...)
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	var firstErr error
	for i, a := range addrs {
		if i > 0 && addrs[i-1] == a {
			d.p.warnf("tree block bytenr %d is duplicated", uint64(a))
			continue
		}
		if uint64(a)%uint64(d.fs.Super.SectorSize) != 0 {
			err := fmt.Errorf("tree block bytenr %d is not aligned to sectorsize %d", uint64(a), d.fs.Super.SectorSize)
			d.p.warnf("%v", err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		n, err := d.fs.R.ReadNode(a, diskio.Expect{Level: -1})
		if err != nil {
			err = fmt.Errorf("failed to read tree block %d: %w", uint64(a), err)
			d.p.warnf("%v", err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		t := &ctree.Tree{R: d.fs.R, ID: n.Owner(), Root: n.Addr, Level: n.Level()}
		d.p.printTree(t, n, d.opts.Follow)
	}
	return firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
