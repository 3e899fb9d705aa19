package treelog

import (
	"encoding/binary"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// extentCursor follows an inode's file extent items while they are copied:
// it adds the holes a NO_HOLES filesystem leaves implicit and collects the
// data extents written in the running transaction (whose checksums the log
// must carry).
type extentCursor struct {
	noHoles bool
	ss      uint64
	transid ondisk.Generation
	isize   uint64
	end     uint64 // end of the last extent seen
	news    []diskRange
}

// diskRange is a data extent on disk.
type diskRange struct {
	start ondisk.LogicalAddr
	n     uint64
}

func (e *extentCursor) reset() {
	e.isize, e.end, e.news = 0, 0, e.news[:0]
}

// see is called with each EXTENT_DATA item before it is added to l.
func (e *extentCursor) see(l *inodeLog, off uint64, d []byte) {
	if len(d) < 21 {
		return
	}
	gen := ondisk.Generation(binary.LittleEndian.Uint64(d[0:]))
	typ := d[20]
	var end uint64
	if typ == 0 { // inline
		end = off + binary.LittleEndian.Uint64(d[8:])
	} else if len(d) >= 53 {
		end = off + binary.LittleEndian.Uint64(d[45:])
		bytenr := ondisk.LogicalAddr(binary.LittleEndian.Uint64(d[21:]))
		n := binary.LittleEndian.Uint64(d[29:])
		if typ == 1 && bytenr != 0 && gen == e.transid {
			if k := len(e.news); k == 0 || e.news[k-1].start != bytenr {
				e.news = append(e.news, diskRange{bytenr, n})
			}
		}
	}
	if e.noHoles && off > e.end {
		l.addHole(l.id.Ino, e.end, off, e.transid)
	}
	e.end = max(e.end, (end+e.ss-1)/e.ss*e.ss)
}

// finish adds the hole from the last extent to the logged size.
func (e *extentCursor) finish(l *inodeLog) {
	size := (e.isize + e.ss - 1) / e.ss * e.ss
	if e.noHoles && e.end < size {
		l.addHole(l.id.Ino, e.end, size, e.transid)
	}
}
