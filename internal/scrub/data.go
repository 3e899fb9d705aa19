package scrub

import (
	"bytes"
	"errors"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// dataPiece is how much of a data extent is read per copy at a time.
const dataPiece = 1 << 20

// dataExtent verifies every copy of every sector of a data extent that
// has a checksum.
func (s *scrubber) dataExtent(r extentRec) {
	s.rep.DataExtents++
	ss := uint64(s.fi.Super.SectorSize)
	end := uint64(r.start) + r.length
	var files []FileRef // who uses the extent, looked up at the first error
	filesDone := false
	for off := uint64(r.start); off < end; off += dataPiece {
		n := min(uint64(dataPiece), end-off)
		if s.o.Progress != nil {
			s.o.Progress.Add(0, int64(n))
		}
		if n%ss != 0 || off%ss != 0 {
			s.report(Error{Kind: VerifyError, Logical: ondisk.LogicalAddr(off), Length: n, Uncorrectable: true,
				Err: errors.New("data extent not aligned to the sector size")})
			return
		}
		var sums interface {
			Sum(int) []byte
		}
		if s.sums != nil {
			got, err := s.sums.Lookup(ondisk.LogicalAddr(off), n)
			if err != nil {
				s.rep.WalkErrors = append(s.rep.WalkErrors, err.Error())
				continue
			}
			sums = got
		}
		copies, err := s.copies(ondisk.LogicalAddr(off), ss)
		if err != nil {
			if !errors.Is(err, volume.ErrMissingDevice) {
				s.report(Error{Kind: ReadError, Logical: ondisk.LogicalAddr(off), Length: n, Uncorrectable: true, Err: err})
			}
			continue
		}
		bufs := make([][]byte, len(copies))
		for m := range copies {
			bufs[m] = make([]byte, n)
			s.readPiece(bufs[m], off, m)
			s.rep.DataBytes += n
		}
		for i := uint64(0); i < n/ss; i++ {
			var want []byte
			if sums != nil {
				want = sums.Sum(int(i))
			}
			if want == nil {
				s.rep.NoCsum += uint64(len(copies))
				continue
			}
			sector := func(m int) []byte { return bufs[m][i*ss : (i+1)*ss] }
			good := -1
			bad := make([]bool, len(copies))
			for m := range copies {
				bad[m] = !bytes.Equal(s.fi.Csum.Sum(sector(m)), want)
				if !bad[m] && good < 0 {
					good = m
				}
			}
			for m := range copies {
				if !bad[m] || len(copies[m].Rebuild) > 0 {
					// a copy rebuilt from parity that fails says the row
					// is inconsistent, not where: the stored copies are
					// what is reported (and repaired from it when good)
					continue
				}
				if !filesDone {
					files, filesDone = s.fileRefs(r), true
				}
				s.dataError(r, ondisk.LogicalAddr(off+i*ss), m, len(copies), good, sector, want, files)
			}
		}
	}
}

// readPiece reads copy m of [off, off+len(buf)); a piece that fails is
// read sector by sector, and a sector that cannot be read is left zero
// (it then fails its checksum, reported as a read error by dataError).
func (s *scrubber) readPiece(buf []byte, off uint64, m int) {
	if s.fi.R.ReadLogical(buf, ondisk.LogicalAddr(off), m) == nil {
		return
	}
	ss := uint64(s.fi.Super.SectorSize)
	for i := uint64(0); i < uint64(len(buf)); i += ss {
		b := buf[i : i+ss]
		if s.fi.R.ReadLogical(b, ondisk.LogicalAddr(off+i), m) != nil {
			clear(b)
		}
	}
}

// dataError reports copy m of the data sector at logical, and repairs it
// from copy good with Repair.
func (s *scrubber) dataError(r extentRec, logical ondisk.LogicalAddr, m, ncopies, good int, sector func(int) []byte, want []byte, files []FileRef) {
	ss := uint64(s.fi.Super.SectorSize)
	e := Error{Kind: CsumError, Logical: logical, Length: ss, Mirror: m + 1, Copies: ncopies, Err: errors.New(s.fi.Csum.String() + " checksum mismatch")}
	copies, err := s.copies(logical, ss)
	var c volume.Copy
	if err == nil && m < len(copies) {
		c = copies[m]
		e.DevID, e.Physical = c.DevID, c.Physical
	}
	if probe := make([]byte, ss); s.fi.R.ReadLogical(probe, logical, m) != nil {
		e.Kind, e.Err = ReadError, errors.New("cannot be read")
	}
	for _, f := range files {
		f.Offset += uint64(logical - r.start)
		e.Files = append(e.Files, f)
	}
	switch {
	case good < 0:
		e.Uncorrectable = true
	case s.o.Repair && err == nil:
		e.repaired(s.rewrite(logical, c, sector(good), func(b []byte) bool {
			return s.fi.R.ReadLogical(b, logical, m) == nil && bytes.Equal(s.fi.Csum.Sum(b), want)
		}))
	}
	s.report(e)
}
