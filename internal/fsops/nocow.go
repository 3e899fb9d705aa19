package fsops

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// writeBuf stores the sector-aligned buf at start: in place where the file
// is NODATACOW or preallocated and the disk extent is not shared, by COW
// everywhere else. mirrors run_delalloc_nocow
func (o *op) writeBuf(id ID, x *item.InodeItem, start uint64, buf []byte) error {
	if x.Flags&(item.InodeNoDataCow|item.InodePrealloc) == 0 {
		return o.cowRange(id, x, start, buf)
	}
	end := start + uint64(len(buf))
	es, err := o.extents(id, start, end)
	if err != nil {
		return err
	}
	pos := start
	for i := range es {
		e := &es[i]
		ok, err := o.canNoCow(id, x, e)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		a, b := max(e.off, start), min(e.end(o.f.sectorSize), end)
		if a > pos {
			if err := o.cowRange(id, x, pos, buf[pos-start:a-start]); err != nil {
				return err
			}
		}
		if err := o.writeInPlace(id, x, e, a, buf[a-start:b-start]); err != nil {
			return err
		}
		pos = b
	}
	if pos < end {
		return o.cowRange(id, x, pos, buf[pos-start:])
	}
	return nil
}

// canNoCow reports whether e may be overwritten in place: preallocated, or
// regular in a NODATACOW file, uncompressed, not written since the last
// snapshot of the subvolume, not referenced in this transaction, and in the
// extent tree referenced only by this inode with this file-to-disk mapping.
// mirrors can_nocow_extent / btrfs_cross_ref_exist
func (o *op) canNoCow(id ID, x *item.InodeItem, e *fext) (bool, error) {
	if e.IsInline() || e.DiskBytenr == 0 || e.Compression != item.CompressNone {
		return false, nil
	}
	if e.Type != item.FileExtentPrealloc && (e.Type != item.FileExtentReg || x.Flags&item.InodeNoDataCow == 0) {
		return false, nil
	}
	if o.f.touched[e.DiskBytenr] {
		return false, nil
	}
	ri, err := o.rootItem(id.Root)
	if err != nil {
		return false, err
	}
	if uint64(e.Generation) <= ri.LastSnapshot {
		return false, nil
	}
	et, err := o.tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		return false, err
	}
	data, ok, err := et.Lookup(ondisk.Key{ObjectID: ondisk.ObjectID(e.DiskBytenr), Type: ondisk.ExtentItemKey, Offset: e.DiskNumBytes})
	if err != nil || !ok {
		return false, err
	}
	ei, err := item.DecodeExtentItem(data)
	if err != nil {
		return false, corruptf("extent item %d: %v", e.DiskBytenr, err)
	}
	var counted uint64
	for _, r := range ei.Inline {
		if r.Type != ondisk.ExtentDataRefKey || r.DataRef.Root != id.Root || r.DataRef.ObjectID != id.Ino ||
			r.DataRef.Offset != e.refOffset() {
			return false, nil
		}
		counted += uint64(r.DataRef.Count)
	}
	return counted == ei.Refs, nil
}

// writeInPlace overwrites the disk bytes of e behind file range [a,
// a+len(data)); a preallocated extent becomes regular there.
// mirrors btrfs_mark_extent_written
func (o *op) writeInPlace(id ID, x *item.InodeItem, e *fext, a uint64, data []byte) error {
	addr := e.DiskBytenr + ondisk.LogicalAddr(e.Offset+(a-e.off))
	if err := o.putData(x, addr, data); err != nil {
		return err
	}
	if e.Type != item.FileExtentPrealloc {
		return nil
	}
	b := a + uint64(len(data))
	eEnd := e.end(o.f.sectorSize)
	piece := func(from, to uint64, typ uint8) fext {
		p := *e
		p.off, p.Offset, p.NumBytes, p.Type = from, e.Offset+(from-e.off), to-from, typ
		if typ == item.FileExtentReg {
			p.Generation = ondisk.Generation(o.transid)
		}
		return p
	}
	var pieces []fext
	if a > e.off {
		pieces = append(pieces, piece(e.off, a, item.FileExtentPrealloc))
	}
	pieces = append(pieces, piece(a, b, item.FileExtentReg))
	if b < eEnd {
		pieces = append(pieces, piece(b, eEnd, item.FileExtentPrealloc))
	}
	t, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	if err := t.UpdateItem(o.a, extentKey(id.Ino, e.off), pieces[0].Bytes()); err != nil {
		return fmt.Errorf("mark extent %d of %v written: %w", e.off, id, err)
	}
	for _, p := range pieces[1:] {
		if err := o.insertExtent(id, p); err != nil {
			return err
		}
	}
	return nil
}
