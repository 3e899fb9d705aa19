package fileread

import (
	"errors"
	"fmt"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/datacsum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// maxPiece bounds one disk read of uncompressed data, so a large read
// streams through a bounded buffer.
const maxPiece = 1 << 20

var pieceBufs = sync.Pool{New: func() any { b := make([]byte, maxPiece+2*65536); return &b }}

// readPlain reads uncompressed extent bytes, verifying whole sectors.
func (en *Engine) readPlain(in Inode, sums *datacsum.Tree, e *Extent, p []byte, off uint64) error {
	logical := uint64(e.DiskBytenr) + e.Offset + (off - e.Start)
	if sums == nil {
		return en.readAnyCopy(in, p, off, logical)
	}
	ss := en.ss
	if start := logical &^ (ss - 1); uint64(len(p)) < ss && logical+uint64(len(p)) <= start+ss {
		return en.readSubSector(in, sums, p, off, logical, start)
	}
	var bufp *[]byte
	defer func() {
		if bufp != nil {
			pieceBufs.Put(bufp)
		}
	}()
	for len(p) > 0 {
		if logical%ss == 0 && uint64(len(p)) >= ss {
			// aligned: read and verify in place, no bounce buffer
			want := min(uint64(len(p))&^(ss-1), maxPiece)
			if err := en.readVerified(in, sums, p[:want], off, ondisk.LogicalAddr(logical)); err != nil {
				return err
			}
			p, off, logical = p[want:], off+want, logical+want
			continue
		}
		if bufp == nil {
			bufp = pieceBufs.Get().(*[]byte)
		}
		start := logical &^ (ss - 1)
		want := min(uint64(len(p)), maxPiece-(logical-start))
		end := (logical + want + ss - 1) &^ (ss - 1)
		buf := (*bufp)[:end-start]
		if err := en.readVerified(in, sums, buf, off-(logical-start), ondisk.LogicalAddr(start)); err != nil {
			return err
		}
		c := uint64(copy(p[:want], buf[logical-start:]))
		p, off, logical = p[c:], off+c, logical+c
	}
	return nil
}

// readSubSector serves a read inside one sector, through the sector cache
// when there is one.
func (en *Engine) readSubSector(in Inode, sums *datacsum.Tree, p []byte, off, logical, start uint64) error {
	rel := int(logical - start)
	if en.sectors != nil && en.sectors.get(ondisk.LogicalAddr(start), rel, p) {
		return nil
	}
	buf := make([]byte, en.ss)
	if err := en.readVerified(in, sums, buf, off-uint64(rel), ondisk.LogicalAddr(start)); err != nil {
		return err
	}
	if en.sectors != nil {
		en.sectors.put(ondisk.LogicalAddr(start), buf)
	}
	copy(p, buf[rel:])
	return nil
}

// readAnyCopy reads without checksums, trying each copy on an I/O error.
func (en *Engine) readAnyCopy(in Inode, p []byte, off, logical uint64) error {
	copies := max(en.r.NumCopies(ondisk.LogicalAddr(logical)), 1)
	var err error
	for m := 0; m < copies; m++ {
		if err = en.r.ReadLogical(p, ondisk.LogicalAddr(logical), m); err == nil {
			return nil
		}
	}
	return in.errAt(off, logical, err)
}

// repairSectors fills buf sector by sector, each from the first copy whose
// sector matches its checksum (a sector without one from the first copy
// that reads); false when some sector has no good copy.
func (en *Engine) repairSectors(sums *datacsum.Tree, s *datacsum.Sums, buf []byte, logical ondisk.LogicalAddr, copies int) bool {
	ss := int(en.ss)
	for i := 0; i*ss < len(buf); i++ {
		sec := buf[i*ss : (i+1)*ss]
		ok := false
		for m := 0; m < copies && !ok; m++ {
			ok = en.r.ReadLogical(sec, logical+ondisk.LogicalAddr(i*ss), m) == nil && sums.Verify(s, i, sec) < 0
		}
		if !ok {
			return false
		}
	}
	return true
}

// readVerified reads sector-aligned buf at logical and checks it against
// sums, trying every copy (DUP data has two) before giving up. fileOff is
// the file offset of buf[0], for messages. A sector without a checksum is
// read unverified, with a warning. mirrors btrfs_lookup_bio_sums +
// btrfs_data_csum_ok + the read repair of the other mirror
func (en *Engine) readVerified(in Inode, sums *datacsum.Tree, buf []byte, fileOff uint64, logical ondisk.LogicalAddr) error {
	s, err := sums.Lookup(logical, uint64(len(buf)))
	if err != nil {
		return in.errAt(fileOff, uint64(logical), err)
	}
	if miss := s.Missing(); miss > 0 {
		en.warn(fmt.Sprintf("nocsum %d %d", uint64(in.Root), uint64(in.Ino)), fmt.Sprintf(
			"%v: no data checksum for %d sector(s) at logical %d (file offset %d); not verified",
			in, miss, logical, fileOff))
	}
	ss := int(en.ss)
	copies := max(en.r.NumCopies(logical), 1)
	var firstErr error
	for m := 0; m < copies; m++ {
		err := en.r.ReadLogical(buf, logical, m)
		if err == nil {
			if bad := sums.Verify(s, 0, buf); bad >= 0 {
				err = in.errAt(fileOff+uint64(bad*ss), uint64(logical)+uint64(bad*ss),
					corruptf("%s data checksum mismatch (copy %d of %d)", en.csum, m+1, copies))
			}
		} else {
			err = in.errAt(fileOff, uint64(logical), err)
		}
		if err == nil {
			if m > 0 {
				en.warn(fmt.Sprintf("mirror %d", logical), fmt.Sprintf("%v: copy 1 of logical %d bad (%v); used copy %d",
					in, logical, firstErr, m+1))
			}
			return nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if copies > 1 && len(buf) > ss {
		// each copy has a bad sector, maybe not the same one (a RAID5/6
		// rebuild needs the row's other stripes good): sector by sector
		if en.repairSectors(sums, s, buf, logical, copies) {
			en.warn(fmt.Sprintf("mirror %d", logical), fmt.Sprintf("%v: logical %d: no copy good in whole (%v); every sector good in one of %d copies",
				in, logical, firstErr, copies))
			return nil
		}
	}
	de, ok := firstErr.(*DataError)
	var missing *volume.MissingDeviceError
	if ok && copies > 1 {
		de.Err = fmt.Errorf("%w; the other %d cop(ies) are bad too", de.Err, copies-1)
	}
	switch {
	case ok && errors.As(de.Err, &missing):
		// said once per device: every sector on it fails alike
		en.warn(fmt.Sprintf("missing %d", missing.DevID), fmt.Sprintf("read error: %v (further reads that need this device are not reported)", de))
	case ok:
		en.warn(fmt.Sprintf("bad %d", de.Logical), fmt.Sprintf("read error: %v", de))
	}
	return firstErr
}
