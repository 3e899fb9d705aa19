package check

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// A pending log tree (an fsync after the last commit) refers to data the
// committed trees do not know yet: its file extent items point to data
// extents that have no extent item until the log is replayed, and the
// checksums of that data may already be in the csum tree. Those checksums
// are not strays. The log must also carry the checksums of what it logs:
// every regular extent of a logged inode without NODATASUM needs checksum
// items in the same log tree or already in the csum tree, or replay
// leaves data without checksums.
// mirrors btrfs-progs check_log_root / check_log_csum (after 6.2)

// logState is what the log trees reference.
type logState struct {
	data rangeList // data extents of the log trees' file extents (unsorted)
}

// logCsumNeed is a logged extent that needs checksums in its log tree.
type logCsumNeed struct {
	key        ondisk.Key
	leaf       ondisk.LogicalAddr
	start, end uint64
}

// logTreeScan reads the leaves of one per-subvolume log tree.
type logTreeScan struct {
	c       *checker
	ri      *rootInfo
	csumIno uint64 // the last logged inode without NODATASUM
	needs   []logCsumNeed
	csums   rangeList
}

func (s *logTreeScan) leaf(n *diskio.Node, fresh bool) {
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		d := n.ItemData(i)
		switch {
		case k.Type == ondisk.InodeItemKey:
			s.csumIno = 0
			if len(d) >= item.InodeItemSize && le.Uint64(d[64:])&item.InodeNoDataSum == 0 {
				s.csumIno = uint64(k.ObjectID)
			}
		case k.Type == ondisk.ExtentDataKey:
			s.fileExtent(n, k, d)
		case k.ObjectID == ondisk.ExtentCsumObjectID && k.Type == ondisk.ExtentCsumKey:
			if len(d) > 0 && len(d)%s.c.csumSize == 0 {
				s.csums = append(s.csums, rng{k.Offset, k.Offset + uint64(len(d)/s.c.csumSize)*s.c.sectorsize})
			}
		}
	}
}

func (s *logTreeScan) fileExtent(n *diskio.Node, k ondisk.Key, d []byte) {
	if len(d) < item.FileExtentItemSize {
		return
	}
	typ := d[20]
	if typ != item.FileExtentReg && typ != item.FileExtentPrealloc {
		return
	}
	disk, diskLen, off, num := le.Uint64(d[21:]), le.Uint64(d[29:]), le.Uint64(d[37:]), le.Uint64(d[45:])
	if disk == 0 || diskLen == 0 {
		return // a hole
	}
	s.c.logs.data = append(s.c.logs.data, rng{disk, disk + diskLen})
	if typ != item.FileExtentReg || uint64(k.ObjectID) != s.csumIno {
		return
	}
	start, end := disk+off, disk+off+num
	if d[16] != item.CompressNone { // checksums cover the compressed bytes
		start, end = disk, disk+diskLen
	}
	s.needs = append(s.needs, logCsumNeed{key: k, leaf: n.Addr, start: start, end: end})
}

// finish reports logged extents whose checksums the log lacks.
func (s *logTreeScan) finish() {
	csums := s.csums.normalize()
	for _, nd := range s.needs {
		// the csum tree may hold them already (written before the fsync)
		missing := rangeList{{nd.start, nd.end}}.subtract(csums).subtract(s.c.csums)
		if len(missing) == 0 {
			continue
		}
		s.c.problem(ClassCsum, ondisk.TreeLogObjectID, nd.leaf, keyp(nd.key),
			"log tree of subvolume %d: inode %d offset %d logs data [%d, %d) without its checksums ([%d, %d) is in neither the log nor the csum tree)",
			s.ri.key.Offset, nd.key.ObjectID, nd.key.Offset, nd.start, nd.end, missing[0].start, missing[0].end)
	}
}
