package fsops

import (
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// What the doors above fsops (the read-write mount, the library's RW) need
// of the transaction layer and the open filesystem, so that none of them
// reaches past fsops into txn or fsinfo.

// StartCommitTimer commits every d until Close.
func (f *FS) StartCommitTimer(d time.Duration) { f.tx.StartCommitTimer(d) }

// DefaultSubvolume returns the subvolume the root tree's "default" entry
// names (the top level when there is none): what a mount without subvol=
// serves.
func (f *FS) DefaultSubvolume() (ondisk.ObjectID, error) {
	var id ondisk.ObjectID
	err := f.run(func(o *op) error {
		var err error
		id, err = o.defaultSubvol()
		return err
	})
	return id, err
}

// Space is what statfs reports: the size of the filesystem, the space data
// can still use (free space in data block groups, less the global reserve
// when data and metadata share mixed groups, plus what new data chunks
// could hold of the unallocated device space: half of it for DUP) and the
// data block size. It takes no filesystem lock, so it does not wait for a
// running commit: the total is the committed one.
// mirrors btrfs_statfs (f_bavail, btrfs_calc_avail_data_space)
func (f *FS) Space() (total, dataFree uint64, blockSize uint32) {
	g := f.tx.Groups()
	unalloc := g.Device().Unallocated()
	if g.Profile(ondisk.BlockGroupData)&ondisk.BlockGroupDup != 0 {
		unalloc /= 2 // a DUP chunk takes two stripes of it
	}
	return f.tx.TotalBytes(), f.tx.DataFree() + unalloc, uint32(f.sectorSize)
}

// SeekData returns the first offset >= off of id that holds data (data) or
// lies in a hole (!data), as lseek's SEEK_DATA / SEEK_HOLE: ENXIO past the
// end, holes and prealloc are holes. It sees what is written to the running
// transaction: callers write buffered data back first.
func (f *FS) SeekData(id ondisk.InodeRef, off int64, data bool) (int64, error) {
	var out int64
	err := f.run(func(o *op) error {
		x, err := o.inode(id)
		if err != nil {
			return err
		}
		size := int64(x.Size)
		if off < 0 || off >= size {
			return syscall.ENXIO
		}
		t, err := o.tree(id.Root)
		if err != nil {
			return err
		}
		for pos := uint64(off); pos < uint64(size); {
			spans, err := inode.MapAt(t, id.Ino, pos, 16)
			if err != nil {
				return err
			}
			if len(spans) == 0 {
				break
			}
			for _, s := range spans {
				isData := s.Extent != nil && (s.Extent.Type == inode.ExtentInline ||
					s.Extent.Type == inode.ExtentRegular && s.Extent.DiskBytenr != 0)
				if isData == data && s.End > pos {
					out = int64(max(pos, s.Start))
					return nil
				}
				pos = max(pos, s.End)
			}
		}
		if data {
			return syscall.ENXIO
		}
		out = size
		return nil
	})
	return out, err
}

// CommitStats is what the commits did: how many, how long they took, and
// how long they held the transaction lock (the rest is writing and
// flushing, which operations do not wait for).
type CommitStats struct {
	Commits                           int
	MaxCommit, TotalCommit            time.Duration
	MaxLocked, LastLocked, LastCommit time.Duration
}

// CommitStats reports the commits since open.
func (f *FS) CommitStats() CommitStats {
	s := f.tx.Stats()
	return CommitStats{Commits: s.Commits, MaxCommit: s.MaxCommit, TotalCommit: s.TotalCommit,
		MaxLocked: s.MaxLocked, LastLocked: s.LastLocked, LastCommit: s.LastCommit}
}
