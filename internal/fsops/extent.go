package fsops

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// fext is a file extent item with the file offset of its key.
type fext struct {
	off uint64
	item.FileExtentItem
}

func alignDown(v, a uint64) uint64 { return v / a * a }
func alignUp(v, a uint64) uint64   { return (v + a - 1) / a * a }

// end is the first file offset past the extent (inline extents fill their
// sector).
func (e *fext) end(ss uint64) uint64 {
	if e.IsInline() {
		return alignUp(e.off+e.RAMBytes, ss)
	}
	return e.off + e.NumBytes
}

// hole reports a regular extent without disk space.
func (e *fext) hole() bool { return !e.IsInline() && e.DiskBytenr == 0 }

// data reports an extent with file data written to it (not a hole, not
// preallocated).
func (e *fext) data() bool {
	return e.IsInline() || (e.DiskBytenr != 0 && e.Type == item.FileExtentReg)
}

// refOffset is the offset of the extent's EXTENT_DATA_REF: the file offset
// the disk extent's first byte would have.
func (e *fext) refOffset() uint64 { return e.off - e.Offset }

func extentKey(ino ondisk.ObjectID, off uint64) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: off}
}

// extents returns the file extents of id that overlap [start, end), in order.
func (o *op) extents(id ondisk.InodeRef, start, end uint64) ([]fext, error) {
	t, err := o.tree(id.Root)
	if err != nil {
		return nil, err
	}
	first := extentKey(id.Ino, 0)
	p, ok, err := t.SearchBackward(extentKey(id.Ino, start))
	if err == nil && (!ok || p.Key().Less(first)) {
		p, ok, err = t.SearchForward(first)
	}
	var out []fext
	for ; err == nil && ok; ok, err = p.Next() {
		k := p.Key()
		if k.Less(first) {
			continue
		}
		if k.ObjectID != id.Ino || k.Type != ondisk.ExtentDataKey || k.Offset >= end {
			break
		}
		fi, derr := item.DecodeFileExtentItem(p.Data())
		if derr == nil {
			derr = inode.CheckFileExtent(k.Offset, fi)
		}
		if derr != nil {
			return nil, corruptf("file extent %v of %v: %w", k, id, derr)
		}
		e := fext{k.Offset, fi}
		if e.end(o.f.sectorSize) > start {
			out = append(out, e)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("file extents of %v: %w", id, err)
	}
	return out, nil
}

// hasExtents reports whether id has any file extent item.
func (o *op) hasExtents(id ondisk.InodeRef) (bool, error) {
	es, err := o.extents(id, 0, ^uint64(0))
	return len(es) > 0, err
}

// insertExtent adds a file extent item and, for one with disk space, its
// data reference. mirrors insert_reserved_file_extent
func (o *op) insertExtent(id ondisk.InodeRef, e fext) error {
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	if err := t.InsertItem(o.a, extentKey(id.Ino, e.off), e.Bytes()); err != nil {
		return fmt.Errorf("insert file extent %d of %v: %w", e.off, id, err)
	}
	if e.IsInline() || e.DiskBytenr == 0 {
		return nil
	}
	o.f.touchExtent(e.DiskBytenr, id, e.refOffset())
	if err := o.h.AddDataRef(e.DiskBytenr, e.DiskNumBytes, id.Root, id.Ino, e.refOffset()); err != nil {
		return fmt.Errorf("add data ref %d for %v at %d: %w", e.DiskBytenr, id, e.off, err)
	}
	return nil
}

// dropExtents removes file data in [start, end): extents inside are deleted
// (their references dropped), extents crossing an edge are trimmed, and one
// spanning the whole range is split in two, the tail a new reference to the
// same disk extent. It returns the bytes the inode no longer accounts for
// (nbytes). Inline extents must lie inside the range. mirrors btrfs_drop_extents
func (o *op) dropExtents(id ondisk.InodeRef, start, end uint64) (uint64, error) {
	if start >= end {
		return 0, nil
	}
	es, err := o.extents(id, start, end)
	if err != nil {
		return 0, err
	}
	t, err := o.tree(id.Root)
	if err != nil {
		return 0, err
	}
	var freed uint64
	for _, e := range es {
		eEnd := e.end(o.f.sectorSize)
		key := extentKey(id.Ino, e.off)
		if e.IsInline() {
			if e.off < start {
				return freed, fmt.Errorf("drop extents [%d,%d) of %v: would split an inline extent (program bug)", start, end, id)
			}
			if err := t.DeleteItem(o.a, key); err != nil {
				return freed, fmt.Errorf("delete inline extent of %v: %w", id, err)
			}
			freed += e.RAMBytes
			continue
		}
		counted := !e.hole()
		switch {
		case e.off < start && eEnd > end: // split: keep head, new item for the tail
			tail := e
			tail.off = end
			tail.Offset += end - e.off
			tail.NumBytes = eEnd - end
			e.NumBytes = start - e.off
			if err := t.UpdateItem(o.a, key, e.Bytes()); err != nil {
				return freed, fmt.Errorf("split file extent %d of %v: %w", e.off, id, err)
			}
			if err := o.insertExtent(id, tail); err != nil {
				return freed, err
			}
			if counted {
				freed += end - start
			}
		case e.off < start: // trim the tail
			e.NumBytes = start - e.off
			if err := t.UpdateItem(o.a, key, e.Bytes()); err != nil {
				return freed, fmt.Errorf("trim file extent %d of %v: %w", e.off, id, err)
			}
			if counted {
				freed += eEnd - start
			}
		case eEnd > end: // trim the head: the key moves, the reference stays
			if err := t.DeleteItem(o.a, key); err != nil {
				return freed, fmt.Errorf("trim file extent %d of %v: %w", e.off, id, err)
			}
			ne := e
			ne.off = end
			ne.Offset += end - e.off
			ne.NumBytes = eEnd - end
			if err := t.InsertItem(o.a, extentKey(id.Ino, end), ne.Bytes()); err != nil {
				return freed, fmt.Errorf("trim file extent %d of %v: %w", e.off, id, err)
			}
			if counted {
				freed += end - e.off
			}
		default: // inside: delete
			if err := t.DeleteItem(o.a, key); err != nil {
				return freed, fmt.Errorf("delete file extent %d of %v: %w", e.off, id, err)
			}
			if !e.hole() {
				o.f.touchExtent(e.DiskBytenr, id, e.refOffset())
				if err := o.h.DropDataRef(e.DiskBytenr, e.DiskNumBytes, id.Root, id.Ino, e.refOffset()); err != nil {
					return freed, fmt.Errorf("drop data ref %d of %v: %w", e.DiskBytenr, id, err)
				}
			}
			if counted {
				freed += e.NumBytes
			}
		}
	}
	return freed, nil
}

// holeExtent is an explicit hole (filesystems without NO_HOLES).
func (o *op) holeExtent(off, n uint64) fext {
	return fext{off, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: n,
		Type: item.FileExtentReg, NumBytes: n}}
}

// fillHoles inserts hole extents for every gap in [from, to) when the
// filesystem lacks NO_HOLES. mirrors btrfs_cont_expand / fill_holes
func (o *op) fillHoles(id ondisk.InodeRef, from, to uint64) error {
	if o.f.noHoles {
		return nil
	}
	ss := o.f.sectorSize
	from, to = alignDown(from, ss), alignUp(to, ss)
	if from >= to {
		return nil
	}
	es, err := o.extents(id, from, to)
	if err != nil {
		return err
	}
	pos := from
	for _, e := range es {
		if e.off > pos {
			if err := o.insertExtent(id, o.holeExtent(pos, e.off-pos)); err != nil {
				return err
			}
		}
		pos = max(pos, e.end(ss))
	}
	if pos < to {
		return o.insertExtent(id, o.holeExtent(pos, to-pos))
	}
	return nil
}
