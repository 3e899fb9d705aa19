package check

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// File type bits of an inode mode, and the dir item type for each.
const (
	sIFMT   = 0o170000
	sIFSOCK = 0o140000
	sIFLNK  = 0o120000
	sIFREG  = 0o100000
	sIFBLK  = 0o060000
	sIFDIR  = 0o040000
	sIFCHR  = 0o020000
	sIFIFO  = 0o010000
)

// modeType is the dir item type (BTRFS_FT_*) of a mode, 0 for an invalid mode.
func modeType(mode uint32) uint8 {
	switch mode & sIFMT {
	case sIFREG:
		return item.FTRegFile
	case sIFDIR:
		return item.FTDir
	case sIFCHR:
		return item.FTChrdev
	case sIFBLK:
		return item.FTBlkdev
	case sIFIFO:
		return item.FTFifo
	case sIFSOCK:
		return item.FTSock
	case sIFLNK:
		return item.FTSymlink
	}
	return 0
}

// inodeState is what the checker gathers about the inode whose items it
// is reading (all items of an inode are adjacent in key order).
type inodeState struct {
	ino       uint64
	active    bool
	firstKey  ondisk.Key
	firstLeaf ondisk.LogicalAddr

	haveItem   bool
	key        ondisk.Key // INODE_ITEM key
	leaf       ondisk.LogicalAddr
	nlink      uint32
	mode       uint32
	size       uint64
	nbytes     uint64
	flags      uint64
	names      int    // names in INODE_REF / INODE_EXTREF items
	rootDotDot bool   // the root directory's ".." INODE_REF
	dirSize    uint64 // name lengths of its DIR_ITEM and DIR_INDEX entries
	dirEntries bool
	extents    bool
	extStart   uint64 // file offset of the first file extent
	extEnd     uint64 // end of the last file extent
	firstGap   uint64 // start of the first gap between file extents
	foundSize  uint64 // what nbytes should be
}

// inodeChecker checks the inodes of one subvolume tree as its leaves go by.
type inodeChecker struct {
	c         *checker
	ri        *rootInfo
	tree      ondisk.ObjectID
	noHoles   bool
	rootDir   uint64
	maxInline uint64
	cur       inodeState
	links     map[linkKey]*linkRec
	orphans   map[uint64]bool // ORPHAN_ITEMs
	unlinked  []inodeState    // nlink 0: they need an ORPHAN_ITEM
	sawRoot   bool
	// sawInoCache: the deprecated inode cache was reported
	sawInoCache bool
	// orphanDirs are directories with nlink 0 and an ORPHAN_ITEM: their
	// entries wait for the orphan cleanup and follow no name rules
	orphanDirs map[uint64]bool
	fresh      bool // the current leaf is read for the first time
	leafAddr   ondisk.LogicalAddr
}

func newInodeChecker(c *checker, ri *rootInfo) *inodeChecker {
	maxItem := c.nodesize - ondisk.HeaderSize - ondisk.ItemHeaderSize
	return &inodeChecker{
		c: c, ri: ri, tree: ri.id,
		noHoles:   c.sb.IncompatFlags&ondisk.IncompatNoHoles != 0,
		rootDir:   uint64(ri.item.RootDirID),
		maxInline: min(c.sectorsize-1, maxItem-item.FileExtentInlineDataStart),
		links:     map[linkKey]*linkRec{},
		orphans:   map[uint64]bool{},
	}
}

// bad reports an item-local problem, once: only while reading a leaf for
// the first time (a snapshot sharing the leaf would repeat it).
func (ic *inodeChecker) bad(k ondisk.Key, format string, args ...any) {
	if ic.fresh {
		ic.c.problem(ClassInode, ic.tree, ic.leafAddr, keyp(k), format, args...)
	}
}

// inodeProblem reports a problem of the inode as a whole.
func (ic *inodeChecker) inodeProblem(s *inodeState, format string, args ...any) {
	k, leaf := s.key, s.leaf
	if !s.haveItem {
		k, leaf = s.firstKey, s.firstLeaf
	}
	ic.c.problem(ClassInode, ic.tree, leaf, keyp(k), format, args...)
}

// leaf feeds the items of one leaf, in key order.
func (ic *inodeChecker) leaf(n *diskio.Node, fresh bool) {
	ic.fresh, ic.leafAddr = fresh, n.Addr
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		ino := uint64(k.ObjectID)
		if !ic.cur.active || ic.cur.ino != ino {
			ic.finishInode()
			if k.ObjectID == ondisk.OrphanObjectID {
				if k.Type == ondisk.OrphanItemKey {
					ic.orphans[k.Offset] = true
				}
				continue
			}
			if k.ObjectID == ondisk.FreeInoObjectID && !ic.sawInoCache {
				// removed from the kernel in 5.11; btrfs check after 6.2 fails on it
				ic.sawInoCache = true
				ic.bad(k, "deprecated inode cache (FREE_INO items); remove it with btrfs rescue clear-ino-cache")
			}
			if k.ObjectID > ondisk.LastFreeObjectID {
				continue // the inode cache's items and the like
			}
			if k.ObjectID < ondisk.FirstFreeObjectID {
				ic.bad(k, "item with objectid %d, below the first inode number 256", k.ObjectID)
				continue
			}
			ic.cur = inodeState{ino: ino, active: true, firstKey: k, firstLeaf: n.Addr, firstGap: ^uint64(0)}
		}
		d := n.ItemData(i)
		switch k.Type {
		case ondisk.InodeItemKey:
			ic.inodeItem(k, d)
		case ondisk.InodeRefKey:
			ic.inodeRef(k, d)
		case ondisk.InodeExtrefKey:
			ic.inodeExtref(k, d)
		case ondisk.DirItemKey, ondisk.DirIndexKey, ondisk.XattrItemKey:
			ic.dirItem(k, d)
		case ondisk.ExtentDataKey:
			ic.fileExtent(k, d)
		case ondisk.VerityDescItemKey, ondisk.VerityMerkleItemKey, ondisk.OrphanItemKey:
		default:
			ic.bad(k, "unexpected %s item in a subvolume tree", k.Type)
		}
	}
}

func (ic *inodeChecker) inodeItem(k ondisk.Key, d []byte) {
	s := &ic.cur
	if k.Offset != 0 {
		ic.bad(k, "INODE_ITEM key offset %d, expected 0", k.Offset)
	}
	if s.haveItem {
		ic.bad(k, "second INODE_ITEM for inode %d", s.ino)
		return
	}
	if len(d) < item.InodeItemSize {
		ic.bad(k, "inode item of %d bytes, need %d", len(d), item.InodeItemSize)
		return
	}
	s.haveItem, s.key, s.leaf = true, k, ic.leafAddr
	gen, transid := le.Uint64(d[0:]), le.Uint64(d[8:])
	s.size, s.nbytes = le.Uint64(d[16:]), le.Uint64(d[24:])
	s.nlink, s.mode, s.flags = le.Uint32(d[40:]), le.Uint32(d[52:]), le.Uint64(d[64:])
	if modeType(s.mode) == 0 {
		ic.bad(k, "invalid mode %#o", s.mode)
	}
	if limit := uint64(ic.c.sb.Generation) + 1; gen > limit || transid > limit {
		ic.bad(k, "generation %d / transid %d newer than the superblock's %d", gen, transid, ic.c.sb.Generation)
	}
	if s.mode&sIFMT == sIFLNK && s.flags&(item.InodeImmutable|item.InodeAppend) != 0 {
		ic.bad(k, "symlink with immutable or append-only flag (%#x)", s.flags)
	}
	if s.ino == ic.rootDir {
		ic.sawRoot = true
	}
}

// finishInode checks the inode whose items have all been read.
// mirrors maybe_free_inode_rec, check_root_dir and check_inode_item
func (ic *inodeChecker) finishInode() {
	s := &ic.cur
	if !s.active {
		return
	}
	s.active = false
	if !s.haveItem {
		ic.inodeProblem(s, "items for inode %d but no INODE_ITEM", s.ino)
		return
	}
	isDir := s.mode&sIFMT == sIFDIR
	switch {
	case s.ino == ic.rootDir:
		if !isDir {
			ic.inodeProblem(s, "root directory has mode %#o", s.mode)
		}
		if s.nlink != 1 || s.names != 0 {
			ic.inodeProblem(s, "root directory has nlink %d and %d names, expected 1 and none", s.nlink, s.names)
		}
		if !s.rootDotDot {
			ic.inodeProblem(s, "root directory has no \"..\" INODE_REF")
		}
	case isDir:
		if s.nlink > 1 {
			ic.inodeProblem(s, "directory with nlink %d (a directory has one link)", s.nlink)
		}
		if s.nlink != 0 && s.names != 1 {
			ic.inodeProblem(s, "directory with %d names (INODE_REF/INODE_EXTREF), expected 1", s.names)
		}
	default:
		if uint64(s.nlink) != uint64(s.names) {
			ic.inodeProblem(s, "nlink %d but %d names (INODE_REF/INODE_EXTREF)", s.nlink, s.names)
		}
	}
	if s.nlink == 0 {
		ic.unlinked = append(ic.unlinked, *s)
	}
	ic.checkSizes(s, isDir)
}

// checkSizes compares isize and nbytes with the dir entries and file extents.
func (ic *inodeChecker) checkSizes(s *inodeState, isDir bool) {
	orphan := s.nlink == 0 // orphans keep stale sizes until they are cleaned up
	t := s.mode & sIFMT
	switch {
	case isDir:
		if s.size != s.dirSize && !orphan {
			ic.inodeProblem(s, "directory isize %d but its DIR_ITEM and DIR_INDEX names add up to %d", s.size, s.dirSize)
		}
		if s.extents {
			ic.inodeProblem(s, "directory with file extents")
		}
	case t == sIFREG || t == sIFLNK:
		if s.dirEntries {
			ic.inodeProblem(s, "non-directory with DIR_ITEM/DIR_INDEX items")
		}
		if orphan {
			return
		}
		if s.nbytes != s.foundSize {
			ic.inodeProblem(s, "nbytes %d but the file extents add up to %d", s.nbytes, s.foundSize)
		}
		if !ic.noHoles && s.size > 0 {
			switch {
			case !s.extents:
				ic.inodeProblem(s, "isize %d but no file extents (and NO_HOLES is off)", s.size)
			case s.extStart != 0:
				ic.inodeProblem(s, "first file extent at %d, not 0 (and NO_HOLES is off)", s.extStart)
			case s.firstGap < s.size:
				ic.inodeProblem(s, "gap in the file extents at %d (and NO_HOLES is off)", s.firstGap)
			case s.extEnd < s.size:
				ic.inodeProblem(s, "file extents end at %d, isize is %d (and NO_HOLES is off)", s.extEnd, s.size)
			}
		}
	default:
		if s.dirEntries {
			ic.inodeProblem(s, "non-directory with DIR_ITEM/DIR_INDEX items")
		}
		if s.extents {
			ic.inodeProblem(s, "file extents on an inode of mode %#o", s.mode)
		}
		if s.nbytes != 0 && !orphan {
			ic.inodeProblem(s, "nbytes %d on an inode of mode %#o", s.nbytes, s.mode)
		}
	}
}

// finish runs the checks that need the whole tree: names, orphans, root dir.
func (ic *inodeChecker) finish(damaged bool) {
	ic.finishInode()
	c := ic.c
	if damaged {
		c.rep.warn("tree %s: unreadable blocks, name and orphan checks skipped", ondisk.TreeName(ic.tree))
		return
	}
	if !ic.sawRoot {
		c.problem(ClassInode, ic.tree, 0, keyp(ondisk.Key{ObjectID: ondisk.ObjectID(ic.rootDir), Type: ondisk.InodeItemKey}),
			"root directory %d not found", ic.rootDir)
	}
	ic.orphanDirs = map[uint64]bool{}
	for i := range ic.unlinked {
		s := &ic.unlinked[i]
		if !ic.orphans[s.ino] {
			ic.inodeProblem(s, "nlink 0 but no ORPHAN_ITEM")
		} else if s.mode&sIFMT == sIFDIR {
			ic.orphanDirs[s.ino] = true
		}
	}
	ic.finishLinks()
}
