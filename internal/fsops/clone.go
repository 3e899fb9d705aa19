package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Clone makes [dstOff, dstOff+length) of dst share the data of [srcOff,
// srcOff+length) of src (reflink): new file extent items point at the same
// disk extents with adjusted offsets, each with its own reference. Offsets
// must be sector aligned, and so must length unless the range ends at the
// end of src; length 0 means up to the end of src. mirrors btrfs_clone_files
func (f *FS) Clone(src ondisk.InodeRef, srcOff uint64, dst ondisk.InodeRef, dstOff uint64, length uint64) error {
	return f.run(func(o *op) error {
		if err := o.writable(dst.Root); err != nil {
			return err
		}
		sx, err := o.inode(src)
		if err != nil {
			return err
		}
		dx := sx
		if dst != src {
			if dx, err = o.inode(dst); err != nil {
				return err
			}
		}
		if isDir(sx.Mode) || isDir(dx.Mode) {
			return errf(syscall.EISDIR, "clone %v to %v", src, dst)
		}
		if !isReg(sx.Mode) || !isReg(dx.Mode) {
			return errf(syscall.EINVAL, "clone %v to %v: not regular files", src, dst)
		}
		if (sx.Flags^dx.Flags)&item.InodeNoDataSum != 0 {
			return errf(syscall.EINVAL, "clone %v to %v: checksum settings differ", src, dst)
		}
		if length == 0 {
			if srcOff >= sx.Size {
				return nil
			}
			length = sx.Size - srcOff
		}
		if err := o.checkClone(src, sx, srcOff, dst, dx, dstOff, length); err != nil {
			return err
		}
		if err := o.clone(src, sx, srcOff, dst, dx, dstOff, length); err != nil {
			return err
		}
		return o.putInode(dst, dx)
	})
}

// checkClone applies the alignment and range rules.
// mirrors btrfs_remap_file_range_prep / generic_remap_checks
func (o *op) checkClone(src ondisk.InodeRef, sx *item.InodeItem, srcOff uint64, dst ondisk.InodeRef, dx *item.InodeItem, dstOff, length uint64) error {
	ss := o.f.sectorSize
	send, dend := srcOff+length, dstOff+length
	switch {
	case send < srcOff || dend < dstOff || dend > maxFileSize:
		return errf(syscall.EINVAL, "clone %v: range overflows", src)
	case srcOff%ss != 0 || dstOff%ss != 0:
		return errf(syscall.EINVAL, "clone %v at %d to %v at %d: offsets not aligned to %d", src, srcOff, dst, dstOff, ss)
	case send > sx.Size:
		return errf(syscall.EINVAL, "clone %v: range [%d,%d) past end of file %d", src, srcOff, send, sx.Size)
	case length%ss != 0 && (send != sx.Size || dend < dx.Size):
		return errf(syscall.EINVAL, "clone %v: length %d not aligned to %d", src, length, ss)
	case src == dst && srcOff < dend && dstOff < send:
		return errf(syscall.EINVAL, "clone %v: overlapping ranges", src)
	}
	return nil
}

// clone does the work of Clone (dx stored by the caller).
func (o *op) clone(src ondisk.InodeRef, sx *item.InodeItem, srcOff uint64, dst ondisk.InodeRef, dx *item.InodeItem, dstOff, length uint64) error {
	ss := o.f.sectorSize
	alen := alignUp(length, ss)
	if inl, err := o.inlineExtent(src); err != nil {
		return err
	} else if inl != nil {
		// inline data has no disk extent to share: copy it.
		data, err := o.readRange(src, sx, srcOff, int(length))
		if err != nil {
			return err
		}
		return o.write(dst, dx, dstOff, data)
	}
	st := &store{}
	if inl, err := o.inlineExtent(dst); err != nil {
		return err
	} else if inl != nil {
		if err := o.addUninline(st, dst, dx, inl); err != nil {
			return err
		}
	}
	es, err := o.extents(src, srcOff, srcOff+alen)
	if err != nil {
		return err
	}
	des, err := o.extents(dst, dstOff, dstOff+alen)
	if err != nil {
		return err
	}
	items := itemsInode + itemsHoles + manyItems(len(es)) + 2 + manyItems(len(des)) + 2
	if err := o.reserveStore(dst, st, items, false); err != nil {
		return fmt.Errorf("clone %v to %v: %w", src, dst, err)
	}
	if err := o.applyStore(dst, dx, st); err != nil {
		return err
	}
	freed, err := o.dropExtents(dst, dstOff, dstOff+alen)
	if err != nil {
		return err
	}
	dx.NBytes -= freed
	for _, e := range es {
		if e.hole() {
			continue
		}
		a := max(e.off, srcOff)
		b := min(e.end(ss), srcOff+alen)
		ne := e
		ne.Generation = ondisk.Generation(o.transid)
		ne.off = dstOff + (a - srcOff)
		ne.Offset = e.Offset + (a - e.off)
		ne.NumBytes = b - a
		if err := o.insertExtent(dst, ne); err != nil {
			return err
		}
		dx.NBytes += b - a
	}
	oldEnd := alignUp(dx.Size, ss)
	if dstOff+length > dx.Size {
		dx.Size = dstOff + length
	}
	if err := o.fillHoles(dst, min(oldEnd, dstOff), alignUp(dx.Size, ss)); err != nil {
		return err
	}
	o.touch(dx, true)
	return nil
}
