package check

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// fileExtent reads an EXTENT_DATA item. mirrors process_file_extent and
// check_file_extent
func (ic *inodeChecker) fileExtent(k ondisk.Key, d []byte) {
	s := &ic.cur
	c := ic.c
	if !s.extents {
		s.extents = true
		s.extStart, s.extEnd = k.Offset, k.Offset
	}
	if len(d) < item.FileExtentInlineDataStart {
		ic.bad(k, "file extent item of %d bytes", len(d))
		return
	}
	if k.Offset < s.extEnd {
		ic.bad(k, "file extent at %d overlaps the previous one, which ends at %d", k.Offset, s.extEnd)
	} else if k.Offset > s.extEnd && s.firstGap == ^uint64(0) {
		s.firstGap = s.extEnd
	}
	gen := le.Uint64(d[0:])
	ram := le.Uint64(d[8:])
	comp, enc, other := d[16], d[17], le.Uint16(d[18:])
	typ := d[20]
	if gen > uint64(c.sb.Generation)+1 {
		ic.bad(k, "file extent generation %d newer than the superblock's %d", gen, c.sb.Generation)
	}
	if comp > item.CompressZstd || enc != 0 || other != 0 {
		ic.bad(k, "unknown compression %d / encryption %d / encoding %d", comp, enc, other)
	}
	mask := c.sectorsize - 1
	var num uint64
	switch typ {
	case item.FileExtentInline:
		num = ram
		inlineLen := uint64(len(d) - item.FileExtentInlineDataStart)
		if ram == 0 {
			ic.bad(k, "empty inline extent")
		}
		if k.Offset != 0 {
			ic.bad(k, "inline extent at file offset %d, must be 0", k.Offset)
		}
		if comp != 0 {
			if inlineLen > ic.maxInline || ram > c.sectorsize {
				ic.bad(k, "compressed inline extent too large: %d bytes on disk, %d in memory", inlineLen, ram)
			}
		} else {
			if ram > ic.maxInline {
				ic.bad(k, "inline extent of %d bytes, max %d", ram, ic.maxInline)
			}
			if ram != inlineLen {
				ic.bad(k, "inline extent ram_bytes %d but %d bytes inline", ram, inlineLen)
			}
		}
		s.foundSize += ram
		num = (ram + mask) &^ mask
	case item.FileExtentReg, item.FileExtentPrealloc:
		if len(d) != item.FileExtentItemSize {
			ic.bad(k, "file extent item of %d bytes, expected %d", len(d), item.FileExtentItemSize)
			return
		}
		disk, diskLen, off := le.Uint64(d[21:]), le.Uint64(d[29:]), le.Uint64(d[37:])
		num = le.Uint64(d[45:])
		if k.Offset&mask != 0 {
			ic.bad(k, "file offset %d not aligned to sectorsize %d", k.Offset, c.sectorsize)
		}
		if num == 0 || num&mask != 0 {
			ic.bad(k, "num_bytes %d is zero or not aligned to sectorsize", num)
		}
		if num+off > ram {
			ic.bad(k, "offset %d + num_bytes %d exceed ram_bytes %d", off, num, ram)
		}
		if typ == item.FileExtentPrealloc && comp != 0 {
			ic.bad(k, "compressed preallocated extent")
		}
		if comp != 0 && s.flags&item.InodeNoDataSum != 0 {
			ic.bad(k, "compressed extent in a NODATASUM inode")
		}
		if s.mode&sIFMT == sIFLNK {
			ic.bad(k, "symlink with a regular file extent")
		}
		if disk != 0 {
			s.foundSize += num
			ic.checkExtentCsums(k, typ, disk, diskLen, off, num, comp != 0)
		} else if diskLen != 0 {
			ic.bad(k, "hole with disk_num_bytes %d", diskLen)
		}
	default:
		ic.bad(k, "unknown file extent type %d", typ)
	}
	s.extEnd = k.Offset + num
}

// checkExtentCsums checks that a regular extent of a datasum inode has
// checksums for the range it references, and a NODATASUM one none.
func (ic *inodeChecker) checkExtentCsums(k ondisk.Key, typ uint8, disk, diskLen, off, num uint64, compressed bool) {
	if ic.tree == ondisk.DataRelocTreeObjectID || typ != item.FileExtentReg {
		return
	}
	start, n := disk+off, num
	if compressed {
		start, n = disk, diskLen
	}
	found := ic.c.csums.covered(start, start+n)
	nodatasum := ic.cur.flags&item.InodeNoDataSum != 0
	switch {
	case nodatasum && found > 0:
		ic.bad(k, "NODATASUM inode, but %d bytes of [%d, %d) have checksums", found, start, start+n)
	case !nodatasum && found < n:
		ic.bad(k, "checksums missing for %d of the %d bytes of [%d, %d)", n-found, n, start, start+n)
	}
}
