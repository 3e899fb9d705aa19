package treelog

import (
	"bytes"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

func extentKey(ino ondisk.ObjectID, off uint64) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: off}
}

func csumKey(a ondisk.LogicalAddr) ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.ExtentCsumObjectID, Type: ondisk.ExtentCsumKey, Offset: uint64(a)}
}

// end is where a file extent item starting at off stops covering the file.
func (s *subvol) end(off uint64, fe *item.FileExtentItem) uint64 {
	if fe.IsInline() {
		return (off + fe.RAMBytes + s.r.ss - 1) / s.r.ss * s.r.ss
	}
	return off + fe.NumBytes
}

// replayExtent replays one logged file extent item: the range it covers is
// dropped from the file, the item inserted, its data extent referenced (its
// extent item inserted when it has none) and the log's checksums copied.
// mirrors replay_one_extent
func (s *subvol) replayExtent(it Item) error {
	ino, off := it.Key.ObjectID, it.Key.Offset
	fe, err := item.DecodeFileExtentItem(it.Data)
	if err != nil {
		return s.errorf("log file extent: %w", corrupt(err))
	}
	if ok, err := s.exists(ino); err != nil || !ok {
		return err
	}
	if cur, ok, err := s.t.Lookup(it.Key); err != nil {
		return err
	} else if ok && !fe.IsInline() && bytes.Equal(cur, it.Data) {
		return nil // already there (committed before the crash)
	}
	hasData := !fe.IsInline() && fe.DiskBytenr != 0
	if hasData {
		// The new reference first, so that dropping an old one to the
		// same extent never frees it.
		if err := s.r.h.AddDataRef(fe.DiskBytenr, fe.DiskNumBytes, s.id, ino, off-fe.Offset); err != nil {
			return err
		}
	}
	if err := s.dropExtents(ino, off, s.end(off, &fe)); err != nil {
		return err
	}
	if fe.IsInline() || hasData || !s.r.noHoles {
		if err := s.t.PutItem(s.r.a, it.Key, it.Data); err != nil {
			return err
		}
	}
	if hasData && fe.Type == item.FileExtentReg {
		start, n := fe.DiskBytenr+ondisk.LogicalAddr(fe.Offset), fe.NumBytes
		if fe.Compression != item.CompressNone {
			start, n = fe.DiskBytenr, fe.DiskNumBytes
		}
		if err := s.copyCsums(start, n); err != nil {
			return err
		}
	}
	s.fix[ino] = true
	return nil
}

// copyCsums replaces the checksums of [start, start+n) in the csum tree by
// the log's, run by run of what the log holds. mirrors the csum part of
// replay_one_extent (btrfs_lookup_csums_list, btrfs_del_csums, btrfs_csum_file_blocks)
func (s *subvol) copyCsums(start ondisk.LogicalAddr, n uint64) error {
	cs := s.r.h.CsumSize()
	if cs == 0 {
		return nil
	}
	end := start + ondisk.LogicalAddr(n)
	// The item holding start may begin before it.
	items := s.log.between(csumKey(0), csumKey(end-1))
	var runStart ondisk.LogicalAddr
	var run []byte
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		err := s.r.h.PutCsums(runStart, run)
		run = nil
		return err
	}
	for _, it := range items {
		if len(it.Data)%cs != 0 {
			return s.errorf("log csum item %v: %w", it.Key, corrupt(errString("size not a multiple of the checksum size")))
		}
		a := ondisk.LogicalAddr(it.Key.Offset)
		itEnd := a + ondisk.LogicalAddr(uint64(len(it.Data)/cs)*s.r.ss)
		if itEnd < a {
			return s.errorf("log csum item %v: %w", it.Key, corrupt(errString("covers past the end of the address space")))
		}
		lo, hi := max(a, start), min(itEnd, end)
		if itEnd <= start || lo >= hi {
			continue
		}
		sums := it.Data[uint64(lo-a)/s.r.ss*uint64(cs) : uint64(hi-a)/s.r.ss*uint64(cs)]
		if len(run) > 0 && runStart+ondisk.LogicalAddr(uint64(len(run)/cs)*s.r.ss) != lo {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(run) == 0 {
			runStart = lo
		}
		run = append(run, sums...)
	}
	return flush()
}

// dropExtents removes the file extents of ino in [start, end): items inside
// are deleted (dropping their data references), items across an edge are
// trimmed, an item across both is split. mirrors btrfs_drop_extents
func (s *subvol) dropExtents(ino ondisk.ObjectID, start, end uint64) error {
	if start >= end {
		return nil
	}
	from := extentKey(ino, 0)
	if p, ok, err := s.t.SearchBackward(extentKey(ino, start)); err != nil {
		return err
	} else if ok && p.Key().ObjectID == ino && p.Key().Type == ondisk.ExtentDataKey {
		from = p.Key()
	}
	var its []Item
	err := s.t.Range(from, extentKey(ino, end-1), func(k ondisk.Key, data []byte) bool {
		its = append(its, Item{Key: k, Data: append([]byte(nil), data...)})
		return true
	})
	if err != nil {
		return err
	}
	for _, it := range its {
		if err := s.dropOne(ino, it, start, end); err != nil {
			return s.errorf("drop extent %v of inode %d: %w", it.Key, ino, err)
		}
	}
	return nil
}

func (s *subvol) dropOne(ino ondisk.ObjectID, it Item, start, end uint64) error {
	fe, err := item.DecodeFileExtentItem(it.Data)
	if err != nil {
		return corrupt(err)
	}
	ks := it.Key.Offset
	ke := s.end(ks, &fe)
	if ke <= start || ks >= end {
		return nil
	}
	data := !fe.IsInline() && fe.DiskBytenr != 0
	refOff := ks - fe.Offset
	switch {
	case fe.IsInline():
		if ks < start {
			return nil // an inline extent is never cut (it holds less than a sector)
		}
		return s.t.DeleteItem(s.r.a, it.Key)
	case ks >= start && ke <= end:
		if err := s.t.DeleteItem(s.r.a, it.Key); err != nil {
			return err
		}
		if data {
			return s.r.h.DropDataRef(fe.DiskBytenr, fe.DiskNumBytes, s.id, ino, refOff)
		}
		return nil
	case ks < start && ke > end:
		tail := fe
		tail.Offset += end - ks
		tail.NumBytes = ke - end
		fe.NumBytes = start - ks
		if err := s.t.UpdateItem(s.r.a, it.Key, fe.Bytes()); err != nil {
			return err
		}
		if err := s.t.InsertItem(s.r.a, extentKey(ino, end), tail.Bytes()); err != nil {
			return err
		}
		if data {
			return s.r.h.AddDataRef(fe.DiskBytenr, fe.DiskNumBytes, s.id, ino, refOff)
		}
		return nil
	case ks < start:
		fe.NumBytes = start - ks
		return s.t.UpdateItem(s.r.a, it.Key, fe.Bytes())
	default: // ks >= start, ke > end
		fe.Offset += end - ks
		fe.NumBytes = ke - end
		if err := s.t.DeleteItem(s.r.a, it.Key); err != nil {
			return err
		}
		return s.t.InsertItem(s.r.a, extentKey(ino, end), fe.Bytes())
	}
}
