package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Fallocate modes.
const (
	FallocKeepSize  = 0x01
	FallocPunchHole = 0x02
	FallocZeroRange = 0x10
)

// Fallocate preallocates [off, off+length) (growing the file unless
// FallocKeepSize), or, with FallocPunchHole|FallocKeepSize, deallocates
// it, or, with FallocZeroRange, makes it read as zeros with space
// allocated: partial sectors at the edges zeroed, whole sectors
// deallocated and preallocated (growing the file unless FallocKeepSize).
// mirrors btrfs_fallocate, btrfs_punch_hole and btrfs_zero_range
func (f *FS) Fallocate(id ondisk.InodeRef, mode uint32, off, length uint64) error {
	if mode&^(FallocKeepSize|FallocPunchHole|FallocZeroRange) != 0 || mode&FallocPunchHole != 0 && mode&FallocZeroRange != 0 {
		return errf(syscall.EOPNOTSUPP, "fallocate %v: mode %#x", id, mode)
	}
	if mode&FallocPunchHole != 0 && mode&FallocKeepSize == 0 {
		return errf(syscall.EOPNOTSUPP, "fallocate %v: punch hole without keep size", id)
	}
	if length == 0 {
		return errf(syscall.EINVAL, "fallocate %v: zero length", id)
	}
	if off+length < off || off+length > maxFileSize {
		return errf(syscall.EFBIG, "fallocate %v at %d+%d", id, off, length)
	}
	return f.run(func(o *op) error {
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if !isReg(x.Mode) {
			if isDir(x.Mode) {
				return errf(syscall.EISDIR, "fallocate %v", id)
			}
			return errf(syscall.ENODEV, "fallocate %v", id)
		}
		switch {
		case mode&FallocPunchHole != 0:
			err = o.punchHole(id, x, off, off+length)
		case mode&FallocZeroRange != 0:
			if off < x.Size {
				err = o.punchHole(id, x, off, min(off+length, x.Size))
			}
			if err == nil {
				err = o.prealloc(id, x, off, off+length, mode&FallocKeepSize != 0)
			}
			o.touch(x, true)
		default:
			err = o.prealloc(id, x, off, off+length, mode&FallocKeepSize != 0)
		}
		if err != nil {
			return err
		}
		return o.putInode(id, x)
	})
}

// prealloc gives every part of [off, end) that has no disk space a
// preallocated extent. The extents are allocated before any change, so
// ENOSPC leaves the file as it was. mirrors btrfs_prealloc_file_range
func (o *op) prealloc(id ondisk.InodeRef, x *item.InodeItem, off, end uint64, keep bool) error {
	ss := o.f.sectorSize
	st := &store{}
	if inl, err := o.inlineExtent(id); err != nil {
		return err
	} else if inl != nil {
		if err := o.addUninline(st, id, x, inl); err != nil {
			return err
		}
	}
	start, stop := alignDown(off, ss), alignUp(end, ss)
	es, err := o.extents(id, start, stop)
	if err != nil {
		return err
	}
	var gaps []preallocGap
	pos := start
	for _, e := range es {
		if e.hole() {
			continue
		}
		if pos < e.off {
			gaps = append(gaps, preallocGap{a: pos, b: e.off})
		}
		pos = max(pos, e.end(ss))
	}
	if pos < stop {
		gaps = append(gaps, preallocGap{a: pos, b: stop})
	}
	items := itemsInode + itemsHoles + manyItems(len(es)) + 2
	for _, g := range gaps {
		st.need += g.b - g.a
		items += o.f.cowItems(g.b-g.a, false)
	}
	if err := o.reserveStore(id, st, items, false); err != nil {
		return fmt.Errorf("fallocate %v at %d+%d: %w", id, off, end-off, err)
	}
	for i := range gaps {
		if err := o.allocGap(id, &gaps[i]); err != nil {
			return err
		}
	}
	if err := o.applyStore(id, x, st); err != nil {
		return err
	}
	for _, g := range gaps {
		freed, err := o.dropExtents(id, g.a, g.b) // explicit holes only
		if err != nil {
			return err
		}
		x.NBytes -= freed
		if err := o.preallocRange(id, x, g); err != nil {
			return err
		}
	}
	x.Flags |= item.InodePrealloc
	grow := !keep && end > x.Size
	if grow {
		oldEnd := alignUp(x.Size, ss)
		x.Size = end
		if err := o.fillHoles(id, oldEnd, start); err != nil {
			return err
		}
	}
	o.touch(x, grow)
	return nil
}

// preallocGap is a range without disk space to preallocate, with the
// extents allocated for it.
type preallocGap struct {
	a, b   uint64
	extent []cowPiece // addr and ram only
}

// allocGap allocates extents covering a gap, each up to 128 MiB.
func (o *op) allocGap(id ondisk.InodeRef, g *preallocGap) error {
	for a := g.a; a < g.b; {
		addr, n, err := o.allocData(min(g.b-a, maxExtent))
		if err != nil {
			return fmt.Errorf("fallocate %v at %d: %w", id, a, err)
		}
		g.extent = append(g.extent, cowPiece{off: a, ram: n, addr: addr})
		a += n
	}
	return nil
}

// preallocRange inserts the preallocated extents of a gap.
func (o *op) preallocRange(id ondisk.InodeRef, x *item.InodeItem, g preallocGap) error {
	for _, p := range g.extent {
		e := fext{p.off, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: p.ram,
			Type: item.FileExtentPrealloc, DiskBytenr: p.addr, DiskNumBytes: p.ram, NumBytes: p.ram}}
		if err := o.insertExtent(id, e); err != nil {
			return err
		}
		x.NBytes += p.ram
	}
	return nil
}

// punchHole deallocates [off, end): partial sectors at the edges are zeroed,
// whole sectors lose their extents (hole extents without NO_HOLES). The size
// does not change. It reserves from the global reserve as it frees space,
// but zeroing a partial sector of written data needs a sector of data space.
// mirrors btrfs_punch_hole
func (o *op) punchHole(id ondisk.InodeRef, x *item.InodeItem, off, end uint64) error {
	ss := o.f.sectorSize
	inl, err := o.inlineExtent(id)
	if err != nil {
		return err
	}
	if inl != nil {
		if off >= x.Size {
			return nil
		}
		if err := o.reserveForDelete(itemsInode + 2); err != nil {
			return fmt.Errorf("punch hole in %v: %w", id, err)
		}
		data, err := o.inlineData(id, inl)
		if err != nil {
			return err
		}
		// past the inline data the file is a hole already
		content := append([]byte(nil), data[:min(uint64(len(data)), x.Size)]...)
		n := uint64(len(content))
		clear(content[min(off, n):min(end, n)])
		if err := o.replaceInline(id, x, inl, content); err != nil {
			return err
		}
		o.touch(x, true)
		return nil
	}
	st := &store{}
	lo, hi := alignUp(off, ss), alignDown(end, ss)
	if lo > hi {
		// inside one sector
		if err := o.addZero(st, id, x, off, end); err != nil {
			return err
		}
	} else {
		if off < lo {
			if err := o.addZero(st, id, x, off, lo); err != nil {
				return err
			}
		}
		if end > hi {
			if err := o.addZero(st, id, x, hi, end); err != nil {
				return err
			}
		}
	}
	n := 0
	if lo < hi {
		es, err := o.extents(id, lo, hi)
		if err != nil {
			return err
		}
		n = len(es)
	}
	if err := o.reserveStore(id, st, itemsInode+itemsHoles+manyItems(n)+2, true); err != nil {
		return fmt.Errorf("punch hole in %v at %d+%d: %w", id, off, end-off, err)
	}
	if err := o.applyStore(id, x, st); err != nil {
		return err
	}
	if lo < hi {
		freed, err := o.dropExtents(id, lo, hi)
		if err != nil {
			return err
		}
		x.NBytes -= freed
		if err := o.fillHoles(id, lo, min(hi, alignUp(x.Size, ss))); err != nil {
			return err
		}
	}
	o.touch(x, true)
	return nil
}
