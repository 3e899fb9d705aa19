// Package scrub reads every copy of every tree block and data sector a
// filesystem holds and verifies it against its checksum, as the kernel's
// scrub does (scrub.c), on an image rather than a mount. It walks the
// extent tree one block group at a time: each METADATA_ITEM or tree-block
// EXTENT_ITEM is a tree block, checked copy by copy with diskio's checks
// (checksum, header, tree-checker); each data EXTENT_ITEM is a range whose
// sectors are compared with the csum tree, copy by copy. A bad data sector
// is reported with the files that use it (their back references). With
// Repair, a bad copy is rewritten from a good one (DUP, RAID1*, RAID10)
// and read back; a bad RAID5/6 data stripe is rewritten from parity. (The
// parity itself is not verified: a copy rebuilt from it that fails is not
// reported, as it does not say which stripe of the row is wrong.)
//
// The walk reads through internal/diskio's Reader and internal/volume's
// chunk map: the copies are the ones every reader of the image tries.
package scrub

import (
	"fmt"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/datacsum"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// Options control a scrub.
type Options struct {
	// Repair rewrites a bad copy from a good one; the devices must be
	// open for writing.
	Repair bool
	// Progress, when set, is told the logical bytes scrubbed as they are
	// (about every MiB) and the total once known.
	Progress Progress
	// OnError is called for each error as it is found (for printing while
	// the scrub runs); Report.Errors keeps the first MaxErrors too.
	OnError func(Error)
}

// Progress receives progress counts; *progress.Bar satisfies it.
type Progress interface {
	Add(items, bytes int64)
	SetTotal(items, bytes int64)
}

// MaxErrors bounds the errors kept in a Report (a wrecked image can have
// millions); the counters count them all.
const MaxErrors = 1000

// Kind is what is wrong with a copy.
type Kind string

// The kinds of error, named as btrfs scrub's counters.
const (
	ReadError   Kind = "read"   // the device could not be read
	CsumError   Kind = "csum"   // checksum mismatch
	VerifyError Kind = "verify" // checksum matches, header or items do not (tree blocks)
	SuperError  Kind = "super"  // a superblock copy is bad
)

// Error is one bad copy of a tree block, data sector or superblock.
type Error struct {
	Kind     Kind
	Metadata bool
	Logical  ondisk.LogicalAddr
	Length   uint64
	DevID    ondisk.DevID
	Physical ondisk.PhysicalAddr
	Mirror   int // 1-based copy number
	Copies   int // copies of the range
	// Tree and Level of a tree block (from a copy whose header is good,
	// else the bad one's).
	Tree  ondisk.ObjectID
	Level int
	// Files that use a bad data sector: (subvolume, inode, offset, path).
	Files []FileRef
	// Corrected: the copy was rewritten and reads back good.
	// Uncorrectable: no copy is good.
	Corrected, Uncorrectable bool
	Err                      error
}

// FileRef is one file a data sector belongs to.
type FileRef struct {
	Subvol ondisk.ObjectID
	Ino    ondisk.ObjectID
	Offset uint64 // file offset of the sector
	Path   string // from the subvolume's top, "" when it could not be found
	Err    error  // why the path is unknown
}

// Report is what a scrub found: the counters of btrfs scrub status -R.
type Report struct {
	FSID                          ondisk.UUID
	Started                       time.Time
	Duration                      time.Duration
	DataExtents, TreeExtents      uint64 // data extents; tree blocks, every copy
	DataBytes, TreeBytes          uint64 // bytes read and verified, every copy
	ReadErrors, CsumErrors        uint64
	VerifyErrors, SuperErrors     uint64
	NoCsum                        uint64 // data sectors without a checksum (nodatasum, prealloc), every copy
	Corrected, Uncorrectable      uint64
	Unverified                    uint64 // bytes whose copy is on a missing device
	WalkErrors                    []string
	Errors                        []Error
	NumErrors                     int
	LogTreeSkipped                bool
	superCopies, superCopiesValid int
}

// OK reports whether nothing is left bad: no error, or every one corrected.
// (The counters are in sectors; NumErrors counts bad copies.)
func (r *Report) OK() bool {
	return r.Uncorrectable == 0 && r.ReadErrors+r.CsumErrors+r.VerifyErrors+r.SuperErrors == r.Corrected &&
		len(r.WalkErrors) == 0
}

// scrubber is one run.
type scrubber struct {
	fi   *fsinfo.FSInfo
	o    Options
	rep  *Report
	ext  *ctree.Tree
	sums *datacsum.Tree
	// subvolPaths memoizes the paths of subvolumes for file reports.
	subvolPaths map[ondisk.ObjectID]string
}

// Run scrubs the filesystem fi: superblocks, then every block group of
// the chunk map, in logical order.
func Run(fi *fsinfo.FSInfo, o Options) (*Report, error) {
	s := &scrubber{fi: fi, o: o, rep: &Report{FSID: fi.Super.FSID, Started: time.Now()}}
	var err error
	if s.ext, err = fi.Tree(ondisk.ExtentTreeObjectID); err != nil {
		return nil, fmt.Errorf("scrub: %w", err)
	}
	if ct, err := fi.Tree(ondisk.CsumTreeObjectID); err == nil {
		s.sums = &datacsum.Tree{T: ct, SectorSize: fi.Super.SectorSize, Type: fi.Csum}
	}
	s.rep.LogTreeSkipped = fi.Super.LogRoot != 0
	if o.Progress != nil {
		o.Progress.SetTotal(0, int64(fi.Super.BytesUsed))
	}
	s.supers()
	for _, m := range fi.Chunks.All() {
		s.blockGroup(m)
	}
	if err := s.flush(); err != nil {
		return s.rep, err
	}
	s.rep.Duration = time.Since(s.rep.Started)
	return s.rep, nil
}

// report counts e and keeps it. The counters count sectors, as the
// kernel's do: a bad copy of a tree block adds nodesize/sectorsize to
// verify_errors whether its checksum or its header is wrong (the kernel
// files both as metadata errors), a bad data sector one to csum_errors.
// Corrected counts what was rewritten and read back good (the kernel's
// read-only scrub also counts as corrected what it could have repaired).
func (s *scrubber) report(e Error) {
	n := uint64(1)
	if e.Kind != SuperError {
		n = max(e.Length/uint64(s.fi.Super.SectorSize), 1)
	}
	switch {
	case e.Kind == SuperError:
		s.rep.SuperErrors += n
	case e.Kind == ReadError:
		s.rep.ReadErrors += n
	case e.Metadata:
		s.rep.VerifyErrors += n
	default:
		s.rep.CsumErrors += n
	}
	switch {
	case e.Corrected:
		s.rep.Corrected += n
	case e.Uncorrectable:
		s.rep.Uncorrectable += n
	}
	s.rep.NumErrors++
	if len(s.rep.Errors) < MaxErrors {
		s.rep.Errors = append(s.rep.Errors, e)
	}
	if s.o.OnError != nil {
		s.o.OnError(e)
	}
}

// blockGroup scrubs the extents of chunk m.
func (s *scrubber) blockGroup(m volume.Mapping) {
	lo := ondisk.Key{ObjectID: ondisk.ObjectID(m.Logical)}
	hi := ondisk.Key{ObjectID: ondisk.ObjectID(m.End() - 1), Type: 255, Offset: ^uint64(0)}
	var items []extentRec
	err := s.ext.RangeTolerant(lo, hi, func(k ondisk.Key, data []byte) bool {
		if r, ok := s.extentRec(k, data); ok {
			items = append(items, r)
		}
		return true
	}, func(err error) {
		s.rep.WalkErrors = append(s.rep.WalkErrors, fmt.Sprintf("extent tree of block group %d: %v (its extents there are not scrubbed)", m.Logical, err))
	})
	if err != nil {
		s.rep.WalkErrors = append(s.rep.WalkErrors, fmt.Sprintf("extent tree: %v", err))
		return
	}
	for _, r := range items {
		if end := uint64(r.start) + r.length; end > uint64(m.End()) || end < uint64(r.start) {
			// a hostile or damaged extent item: read no further than its
			// block group
			s.report(Error{Kind: VerifyError, Metadata: r.metadata, Logical: r.start, Length: 0, Uncorrectable: true,
				Err: fmt.Errorf("extent item of %d bytes runs past the end %d of its block group %d", r.length, m.End(), m.Logical)})
			r.length = uint64(m.End() - r.start)
		}
		if r.metadata {
			s.treeBlock(r)
		} else {
			s.dataExtent(r)
		}
	}
}

// flush makes the repairs durable.
func (s *scrubber) flush() error {
	if !s.o.Repair || s.rep.Corrected == 0 {
		return nil
	}
	for _, m := range s.fi.Devices.Members() {
		if m.Dev == nil {
			continue
		}
		if err := m.Dev.Flush(); err != nil {
			return fmt.Errorf("scrub: flush %s after repair: %w", m.Label(), err)
		}
	}
	return nil
}
