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
)

// Fallocate preallocates [off, off+length) (growing the file unless
// FallocKeepSize) or, with FallocPunchHole|FallocKeepSize, deallocates it.
// mirrors btrfs_fallocate and btrfs_punch_hole
func (f *FS) Fallocate(id ID, mode uint32, off, length uint64) error {
	if mode&^(FallocKeepSize|FallocPunchHole) != 0 {
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
		if mode&FallocPunchHole != 0 {
			err = o.punchHole(id, x, off, off+length)
		} else {
			err = o.prealloc(id, x, off, off+length, mode&FallocKeepSize != 0)
		}
		if err != nil {
			return err
		}
		return o.putInode(id, x)
	})
}

// prealloc gives every part of [off, end) that has no disk space a
// preallocated extent. mirrors btrfs_prealloc_file_range
func (o *op) prealloc(id ID, x *item.InodeItem, off, end uint64, keep bool) error {
	ss := o.f.sectorSize
	if inl, err := o.inlineExtent(id); err != nil {
		return err
	} else if inl != nil {
		if err := o.uninline(id, x, inl); err != nil {
			return err
		}
	}
	start, stop := alignDown(off, ss), alignUp(end, ss)
	es, err := o.extents(id, start, stop)
	if err != nil {
		return err
	}
	pos := start
	fill := func(a, b uint64) error {
		if a >= b {
			return nil
		}
		freed, err := o.dropExtents(id, a, b) // explicit holes only
		if err != nil {
			return err
		}
		x.NBytes -= freed
		return o.preallocRange(id, x, a, b)
	}
	for _, e := range es {
		if e.hole() {
			continue
		}
		if err := fill(pos, max(pos, e.off)); err != nil {
			return err
		}
		pos = max(pos, e.end(ss))
	}
	if err := fill(pos, stop); err != nil {
		return err
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

// preallocRange inserts preallocated extents over [a, b).
func (o *op) preallocRange(id ID, x *item.InodeItem, a, b uint64) error {
	for a < b {
		addr, n, err := o.allocData(min(b-a, maxExtent))
		if err != nil {
			return fmt.Errorf("fallocate %v at %d: %w", id, a, err)
		}
		e := fext{a, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: n,
			Type: item.FileExtentPrealloc, DiskBytenr: addr, DiskNumBytes: n, NumBytes: n}}
		if err := o.insertExtent(id, e); err != nil {
			return err
		}
		x.NBytes += n
		a += n
	}
	return nil
}

// punchHole deallocates [off, end): partial sectors at the edges are zeroed,
// whole sectors lose their extents (hole extents without NO_HOLES). The size
// does not change. mirrors btrfs_punch_hole
func (o *op) punchHole(id ID, x *item.InodeItem, off, end uint64) error {
	ss := o.f.sectorSize
	inl, err := o.inlineExtent(id)
	if err != nil {
		return err
	}
	if inl != nil {
		if off >= x.Size {
			return nil
		}
		data, err := o.inlineData(id, inl)
		if err != nil {
			return err
		}
		content := make([]byte, x.Size)
		copy(content, data)
		clear(content[off:min(end, x.Size)])
		if err := o.replaceInline(id, x, inl, content); err != nil {
			return err
		}
		o.touch(x, true)
		return nil
	}
	lo, hi := alignUp(off, ss), alignDown(end, ss)
	if lo > hi {
		// inside one sector
		if err := o.zeroPartial(id, x, off, end); err != nil {
			return err
		}
		o.touch(x, true)
		return nil
	}
	if off < lo {
		if err := o.zeroPartial(id, x, off, lo); err != nil {
			return err
		}
	}
	if end > hi {
		if err := o.zeroPartial(id, x, hi, end); err != nil {
			return err
		}
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
