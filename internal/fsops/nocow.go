package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// refOwner is who changed the references of a data extent in the running
// transaction: one inode with one file-to-disk mapping (root, ino and the
// data ref offset), or several (mixed).
type refOwner struct {
	root, ino ondisk.ObjectID
	off       uint64
	mixed     bool
}

// touchExtent records a reference change of the data extent at addr by
// inode id whose data ref offset is off.
func (f *FS) touchExtent(addr ondisk.LogicalAddr, id ondisk.InodeRef, off uint64) {
	w := refOwner{root: id.Root, ino: id.Ino, off: off}
	if old, ok := f.touched[addr]; ok && old != w {
		w.mixed = true
	}
	f.touched[addr] = w
}

// CanNocow reports whether a write to [off, off+length) of file id can be
// stored in place, needing no data space: every sector of the range is
// covered by extents the inode may overwrite (see canNoCow). It searches
// the file's extents, the root tree and the extent tree, so the buffered
// write path asks only when ReserveData fails: the reserve-first order of
// the kernel fix "Btrfs: fix performance regression of writing to
// prealloc/nocow file". A write accepted this way needs no reservation; its
// writeback (WriteAtReserved) writes it in place, unless a snapshot or
// clone shared the extent meanwhile (so take those only after writeback).
// Stats().NocowChecks counts the calls. mirrors check_can_nocow
func (f *FS) CanNocow(id ondisk.InodeRef, off, length int64) (bool, error) {
	f.nocowChecks.Add(1)
	if off < 0 || length <= 0 || off+length < off {
		return false, errf(syscall.EINVAL, "nocow check %v at %d+%d", id, off, length)
	}
	var can bool
	err := f.run(func(o *op) error {
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if !isReg(x.Mode) || x.Flags&(item.InodeNoDataCow|item.InodePrealloc) == 0 {
			return nil
		}
		ss := o.f.sectorSize
		start, end := alignDown(uint64(off), ss), alignUp(uint64(off+length), ss)
		es, err := o.extents(id, start, end)
		if err != nil {
			return err
		}
		pos := start
		for i := range es {
			e := &es[i]
			if e.off > pos {
				return nil // a hole
			}
			ok, err := o.canNoCow(id, x, e)
			if err != nil || !ok {
				return err
			}
			pos = e.end(ss)
		}
		can = pos >= end
		return nil
	})
	return can, err
}

// canNoCow reports whether e may be overwritten in place: preallocated, or
// regular in a NODATACOW file, uncompressed, not written since the last
// snapshot of the subvolume, its references changed in this transaction by
// this inode and mapping only, and in the extent tree referenced only by
// this inode with this file-to-disk mapping (or not there yet: allocated in
// this transaction). mirrors can_nocow_extent / btrfs_cross_ref_exist
func (o *op) canNoCow(id ondisk.InodeRef, x *item.InodeItem, e *fext) (bool, error) {
	if e.IsInline() || e.DiskBytenr == 0 || e.Compression != item.CompressNone {
		return false, nil
	}
	if e.Type != item.FileExtentPrealloc && (e.Type != item.FileExtentReg || x.Flags&item.InodeNoDataCow == 0) {
		return false, nil
	}
	w, touched := o.f.touched[e.DiskBytenr]
	if touched && w != (refOwner{root: id.Root, ino: id.Ino, off: e.refOffset()}) {
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
	if err != nil {
		return false, err
	}
	if !ok {
		// Not in the extent tree: allocated in this transaction, so every
		// reference it has was added here, by this inode alone.
		return touched, nil
	}
	ei, err := item.DecodeExtentItem(data)
	if err != nil {
		return false, corruptf("extent item %d: %w", e.DiskBytenr, err)
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

// markInPlace records data written over the disk bytes of e behind file
// range [a, a+len(data)) (writeSegData): their checksums, and a
// preallocated extent becomes regular there. mirrors btrfs_mark_extent_written
func (o *op) markInPlace(id ondisk.InodeRef, x *item.InodeItem, e *fext, a uint64, data []byte) error {
	addr := e.DiskBytenr + ondisk.LogicalAddr(e.Offset+(a-e.off))
	if err := o.putCsums(x, addr, data); err != nil {
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
	if merged, err := o.mergeWritten(id, e, a, b, piece); err != nil || merged {
		return err
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

// mergeWritten marks [a, b) of the preallocated extent e written by
// joining it to the regular items beside it that map the bytes of the
// same disk extent just before or after (earlier writes into the same
// preallocation): a stream into a preallocated file, even one whose
// writes arrive out of order, so keeps one item per preallocated extent,
// as the kernel's btrfs_mark_extent_written merges (extent_mergeable).
// It reports whether there was a neighbour to join.
func (o *op) mergeWritten(id ondisk.InodeRef, e *fext, a, b uint64, piece func(from, to uint64, typ uint8) fext) (bool, error) {
	ss := o.f.sectorSize
	eEnd := e.end(ss)
	joins := func(n *fext) bool {
		return !n.IsInline() && n.Type == item.FileExtentReg && n.DiskBytenr == e.DiskBytenr &&
			n.DiskNumBytes == e.DiskNumBytes && n.refOffset() == e.refOffset() &&
			n.Compression == item.CompressNone && n.Encryption == 0 && n.OtherEncoding == 0
	}
	var left, right *fext
	if a == e.off && a > 0 {
		ps, err := o.extents(id, a-1, a)
		if err != nil {
			return false, err
		}
		if len(ps) == 1 && ps[0].end(ss) == a && joins(&ps[0]) {
			left = &ps[0]
		}
	}
	if b == eEnd {
		ns, err := o.extents(id, b, b+1)
		if err != nil {
			return false, err
		}
		if len(ns) == 1 && ns[0].off == b && joins(&ns[0]) {
			right = &ns[0]
		}
	}
	if left == nil && right == nil {
		return false, nil
	}
	t, err := o.tree(id.Root)
	if err != nil {
		return false, err
	}
	del := func(off uint64, dropRef bool) error {
		if err := t.DeleteItem(o.a, extentKey(id.Ino, off)); err != nil {
			return fmt.Errorf("merge written extent %d of %v: %w", off, id, err)
		}
		if !dropRef {
			return nil
		}
		o.f.touchExtent(e.DiskBytenr, id, e.refOffset())
		if err := o.h.DropDataRef(e.DiskBytenr, e.DiskNumBytes, id.Root, id.Ino, e.refOffset()); err != nil {
			return fmt.Errorf("drop data ref %d of %v: %w", e.DiskBytenr, id, err)
		}
		return nil
	}
	put := func(n fext, insert bool) error {
		var err error
		if insert {
			err = t.InsertItem(o.a, extentKey(id.Ino, n.off), n.Bytes())
		} else {
			err = t.UpdateItem(o.a, extentKey(id.Ino, n.off), n.Bytes())
		}
		if err != nil {
			return fmt.Errorf("merge written extent %d of %v: %w", n.off, id, err)
		}
		return nil
	}
	gen := ondisk.Generation(o.transid)
	if left != nil {
		// [left][a,b)[rest of e, preallocated | right]
		w := *left
		w.NumBytes, w.Generation = b-w.off, gen
		if right != nil {
			w.NumBytes += right.NumBytes
		}
		if err := put(w, false); err != nil {
			return false, err
		}
		if err := del(e.off, b == eEnd); err != nil {
			return false, err
		}
		if right != nil {
			return true, del(right.off, true)
		}
		if b < eEnd {
			// the preallocated rest moves behind: same reference, new key
			return true, put(piece(b, eEnd, item.FileExtentPrealloc), true)
		}
		return true, nil
	}
	// [head of e, preallocated][a,b)[right]: the right item's key moves to a
	w := *right
	w.off, w.Offset, w.NumBytes, w.Generation = a, right.Offset-(b-a), right.NumBytes+(b-a), gen
	if err := del(right.off, false); err != nil {
		return false, err
	}
	if a > e.off {
		if err := put(piece(e.off, a, item.FileExtentPrealloc), false); err != nil {
			return false, err
		}
	} else if err := del(e.off, true); err != nil {
		return false, err
	}
	return true, put(w, true)
}
