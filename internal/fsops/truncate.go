package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Truncate sets the size of a regular file.
func (f *FS) Truncate(id ondisk.InodeRef, size uint64) error {
	_, err := f.Setattr(id, SetAttr{Valid: SetSize, Size: size})
	return err
}

// truncate changes x.Size and the extents behind it (the caller stores x).
// Shrinking zeroes the rest of the last sector and drops or trims the extents
// past it; growing adds nothing with NO_HOLES, hole extents otherwise. It
// reserves metadata for its changes and extra more items (the caller's)
// first: from the global reserve when shrinking, as truncation frees space.
// mirrors btrfs_setsize, btrfs_truncate and btrfs_cont_expand
func (o *op) truncate(id ondisk.InodeRef, x *item.InodeItem, size uint64, extra int) error {
	if size > maxFileSize {
		return errf(syscall.EFBIG, "truncate %v to %d", id, size)
	}
	ss := o.f.sectorSize
	old := x.Size
	inl, err := o.inlineExtent(id)
	if err != nil {
		return err
	}
	st := &store{}
	if inl != nil {
		if size < old || o.f.canInline(size) {
			return o.truncateInline(id, x, inl, size, extra)
		}
		if err := o.addUninline(st, id, x, inl); err != nil {
			return err
		}
	}
	if size >= old {
		if err := o.reserveStore(id, st, extra+itemsHoles, false); err != nil {
			return fmt.Errorf("truncate %v to %d: %w", id, size, err)
		}
		if err := o.applyStore(id, x, st); err != nil {
			return err
		}
		x.Size = size
		return o.fillHoles(id, alignUp(old, ss), alignUp(size, ss))
	}
	if size%ss != 0 {
		if err := o.addZero(st, id, x, size, alignUp(size, ss)); err != nil {
			return err
		}
	}
	es, err := o.extents(id, alignUp(size, ss), ^uint64(0))
	if err != nil {
		return err
	}
	if err := o.reserveStore(id, st, extra+manyItems(len(es))+2, true); err != nil {
		return fmt.Errorf("truncate %v to %d: %w", id, size, err)
	}
	if err := o.applyStore(id, x, st); err != nil {
		return err
	}
	freed, err := o.dropExtents(id, alignUp(size, ss), ^uint64(0))
	if err != nil {
		return err
	}
	x.NBytes -= freed
	x.Size = size
	return nil
}

// truncateInline cuts or extends a file that stays inline.
func (o *op) truncateInline(id ondisk.InodeRef, x *item.InodeItem, inl *fext, size uint64, extra int) error {
	var err error
	if size < x.Size {
		err = o.reserveForDelete(extra + 2)
	} else {
		err = o.reserve(extra + 2)
	}
	if err != nil {
		return fmt.Errorf("truncate %v to %d: %w", id, size, err)
	}
	data, err := o.inlineData(id, inl)
	if err != nil {
		return err
	}
	// an inline extent may be followed by a hole up to i_size: the content
	// kept inline is the data, padded with zeros only while the whole file
	// fits inline (never sized by an i_size a crafted image may inflate)
	n := min(size, uint64(len(data)))
	if o.f.canInline(size) {
		n = size
	}
	content := make([]byte, n)
	copy(content, data[:min(uint64(len(data)), x.Size, n)])
	if err := o.replaceInline(id, x, inl, content); err != nil {
		return err
	}
	x.Size = size
	return nil
}

// addZero adds to st the rewrite of the sector holding [a, b) with those
// bytes zeroed, when the sector holds written data (holes and preallocated
// space already read as zeros). mirrors btrfs_truncate_block
func (o *op) addZero(st *store, id ondisk.InodeRef, x *item.InodeItem, a, b uint64) error {
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
	buf, err := o.readRange(id, x, s, int(ss))
	if err != nil {
		return err
	}
	clear(buf[a-s : b-s])
	st.addCow(o.f, x, s, buf)
	st.items += itemsZeroSector
	return nil
}
