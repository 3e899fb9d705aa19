package treelog

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Seed 000 (btrfs: preallocate temporary extent buffer for inode logging):
// copying an inode's items into the log must not hold a subvolume leaf
// while memory is allocated, or every writer waiting for that leaf waits
// for the allocator too. So the leaf is first cloned into a scratch buffer
// that belongs to the log and was prepared before any tree lock (here: the
// transaction handle) was taken; the items are then copied out of the clone
// into the inode's log store, whose memory is reused from the previous
// fsync. After the first fsync of an inode nothing on this path allocates
// (TestCopyLeafItemsAllocs). mirrors clone_leaf / copy_items and
// btrfs_init_log_ctx_scratch_eb

// scratch is the per-log leaf-sized buffer.
type scratch struct {
	leaf diskio.Node // a clone of the subvolume leaf being copied
}

// prepare makes sure the scratch leaf exists; called before Begin.
func (s *scratch) prepare(nodesize int) {
	if len(s.leaf.Data) != nodesize {
		s.leaf.Data = make([]byte, nodesize)
	}
}

// clone copies leaf n into the scratch leaf and returns it. It never
// allocates.
func (s *scratch) clone(n *diskio.Node) *diskio.Node {
	copy(s.leaf.Data, n.Data)
	s.leaf.Addr = n.Addr
	return &s.leaf
}

// wItem is one item of an inode's log store: its key and where its data
// lies in the store's arena.
type wItem struct {
	key       ondisk.Key
	off, size int
}

// inodeLog holds the items of one logged inode (and the checksums of its
// new data), in key order. Its slices are reused from fsync to fsync.
type inodeLog struct {
	id     ondisk.InodeRef
	mode   logMode
	ranges []indexRange // DIR_INDEX ranges copied (planned.ranges, modeDir)
	dels   []uint64     // planned.dels copied with
	// transid is the transaction the store was copied in.
	transid ondisk.Generation
	// ver changes with every copy into the store (Writer.version): equal
	// versions mean equal items (writeleaves.go).
	ver   uint64
	items []wItem
	csums []wItem // EXTENT_CSUM items (keyed as in the csum tree)
	arena []byte
}

func (l *inodeLog) reset() {
	l.items, l.csums, l.arena = l.items[:0], l.csums[:0], l.arena[:0]
}

func (l *inodeLog) data(it wItem) []byte { return l.arena[it.off : it.off+it.size] }

// add appends an item whose data is copied from b.
func (l *inodeLog) add(k ondisk.Key, b []byte) {
	off := len(l.arena)
	l.arena = append(l.arena, b...)
	l.items = append(l.items, wItem{k, off, len(b)})
}

// addCsum appends an EXTENT_CSUM item.
func (l *inodeLog) addCsum(start ondisk.LogicalAddr, sums []byte) {
	off := len(l.arena)
	l.arena = append(l.arena, sums...)
	l.csums = append(l.csums, wItem{ondisk.Key{ObjectID: ondisk.ExtentCsumObjectID,
		Type: ondisk.ExtentCsumKey, Offset: uint64(start)}, off, len(sums)})
}

// addHole appends a hole file extent item for [start, end) (NO_HOLES
// filesystems keep no such items; the log needs them so that replay drops
// what the committed tree has there). mirrors btrfs_log_holes
func (l *inodeLog) addHole(ino ondisk.ObjectID, start, end uint64, transid ondisk.Generation) {
	off := len(l.arena)
	l.arena = append(l.arena, make53[:]...)
	b := l.arena[off:]
	binary.LittleEndian.PutUint64(b[0:], uint64(transid))
	binary.LittleEndian.PutUint64(b[8:], end-start) // ram_bytes
	b[20] = 1                                       // BTRFS_FILE_EXTENT_REG, disk_bytenr 0
	binary.LittleEndian.PutUint64(b[45:], end-start)
	l.items = append(l.items, wItem{ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: start}, off, 53})
}

var make53 [53]byte

// loggedType reports whether the log copies items of type t for an inode
// logged in mode m.
func loggedType(t ondisk.ItemType, m logMode) bool {
	switch t {
	case ondisk.InodeItemKey, ondisk.InodeRefKey, ondisk.InodeExtrefKey, ondisk.XattrItemKey:
		return true
	case ondisk.ExtentDataKey:
		return m >= modeAll
	case ondisk.DirIndexKey:
		return m == modeDir
	}
	return false
}

// inRanges reports whether DIR_INDEX index i lies in the store's ranges.
func (l *inodeLog) inRanges(i uint64) bool {
	rs := l.ranges
	j := sort.Search(len(rs), func(j int) bool { return rs[j].last >= i })
	return j < len(rs) && rs[j].first <= i
}

// addDirRanges adds the DIR_LOG_INDEX items of a logged directory: one
// range over every index when it is logged whole, else a one-index range
// for each committed name replay must remove. They go between the xattrs
// and the DIR_INDEX items. mirrors insert_dir_log_key
func (l *inodeLog) addDirRanges(pl *planned) {
	ino := l.id.Ino
	n0 := len(l.items)
	put := func(start, end uint64) {
		off := len(l.arena)
		l.arena = binary.LittleEndian.AppendUint64(l.arena, end)
		l.items = append(l.items, wItem{ondisk.Key{ObjectID: ino, Type: ondisk.DirLogIndexKey, Offset: start}, off, 8})
	}
	if pl.mode == modeDir {
		for _, r := range pl.ranges {
			put(r.first, r.last)
		}
	} else {
		dels := slices.Clone(pl.dels)
		slices.Sort(dels)
		dels = slices.Compact(dels)
		for i := 0; i < len(dels); {
			j := i
			for j+1 < len(dels) && dels[j+1] == dels[j]+1 {
				j++
			}
			put(dels[i], dels[j])
			i = j + 1
		}
	}
	// The ranges (in order) go before the first item after them: the
	// DIR_INDEX items (a large directory has many; no sort of them all).
	byKey := func(a, b wItem) int { return a.key.Compare(b.key) }
	added := slices.Clone(l.items[n0:])
	l.items = l.items[:n0]
	if len(added) > 0 {
		pos := sort.Search(n0, func(i int) bool { return l.items[i].key.Compare(added[0].key) > 0 })
		l.items = slices.Insert(l.items, pos, added...)
	}
	if !slices.IsSortedFunc(l.items, byKey) {
		slices.SortStableFunc(l.items, byKey)
	}
}

// copyLeafItems copies the items of ino held by leaf (from slot on) into
// l: the leaf is cloned into the scratch buffer first and the items are
// read from the clone. It reports whether the leaf's last item still
// belongs to ino (the next leaf must be copied too). Extent holes are
// tracked through ext. mirrors copy_items
func (s *scratch) copyLeafItems(leaf *diskio.Node, slot int, l *inodeLog, ext *extentCursor) bool {
	c := s.clone(leaf)
	nr := c.NumItems()
	ino := l.id.Ino
	for i := slot; i < nr; i++ {
		k := c.Key(i)
		if k.ObjectID != ino || l.mode == modeExists && k.Type > ondisk.XattrItemKey {
			return false
		}
		if !loggedType(k.Type, l.mode) || k.Type == ondisk.DirIndexKey && !l.inRanges(k.Offset) {
			continue
		}
		d := c.ItemData(i)
		if k.Type == ondisk.InodeItemKey && len(d) >= 24 {
			ext.isize = binary.LittleEndian.Uint64(d[16:])
		}
		if k.Type == ondisk.ExtentDataKey {
			ext.see(l, k.Offset, d)
		}
		l.add(k, d)
	}
	return true
}
