package fsops

import (
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Truncate sets the size of a regular file.
func (f *FS) Truncate(id ID, size uint64) error {
	_, err := f.Setattr(id, SetAttr{Valid: SetSize, Size: size})
	return err
}

// truncate changes x.Size and the extents behind it (the caller stores x).
// Shrinking zeroes the rest of the last sector and drops or trims the extents
// past it; growing adds nothing with NO_HOLES, hole extents otherwise.
// mirrors btrfs_setsize, btrfs_truncate and btrfs_cont_expand
func (o *op) truncate(id ID, x *item.InodeItem, size uint64) error {
	if size > maxFileSize {
		return errf(syscall.EFBIG, "truncate %v to %d", id, size)
	}
	ss := o.f.sectorSize
	old := x.Size
	inl, err := o.inlineExtent(id)
	if err != nil {
		return err
	}
	if inl != nil {
		if size < old || o.f.canInline(size) {
			data, err := o.inlineData(id, inl)
			if err != nil {
				return err
			}
			content := make([]byte, size)
			copy(content, data[:min(uint64(len(data)), old, size)])
			if err := o.replaceInline(id, x, inl, content); err != nil {
				return err
			}
			x.Size = size
			return nil
		}
		if err := o.uninline(id, x, inl); err != nil {
			return err
		}
	}
	if size >= old {
		x.Size = size
		return o.fillHoles(id, alignUp(old, ss), alignUp(size, ss))
	}
	if size%ss != 0 {
		if err := o.zeroPartial(id, x, size, alignUp(size, ss)); err != nil {
			return err
		}
	}
	freed, err := o.dropExtents(id, alignUp(size, ss), ^uint64(0))
	if err != nil {
		return err
	}
	x.NBytes -= freed
	x.Size = size
	return nil
}

// zeroPartial zeroes [a, b) inside one sector when the sector holds written
// data (holes and preallocated space already read as zeros), by rewriting
// the sector. mirrors btrfs_truncate_block
func (o *op) zeroPartial(id ID, x *item.InodeItem, a, b uint64) error {
	ss := o.f.sectorSize
	s := alignDown(a, ss)
	b = min(b, x.Size)
	if a >= b {
		return nil
	}
	es, err := o.extents(id, s, s+ss)
	if err != nil {
		return err
	}
	written := false
	for i := range es {
		written = written || es[i].data()
	}
	if !written {
		return nil
	}
	buf, err := o.readRange(id, x.Size, s, int(ss))
	if err != nil {
		return err
	}
	clear(buf[a-s : b-s])
	return o.cowRange(id, x, s, buf)
}
