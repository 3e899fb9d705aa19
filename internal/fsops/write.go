package fsops

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

const (
	// maxExtent is BTRFS_MAX_EXTENT_SIZE, the largest regular data extent.
	maxExtent = 128 << 20
	// maxCompressedChunk is BTRFS_MAX_UNCOMPRESSED: file bytes per compressed extent.
	maxCompressedChunk = 128 << 10
	// maxFileSize is MAX_LFS_FILESIZE.
	maxFileSize = 1<<63 - 1
)

// WriteAt writes data into file id at off, growing it as needed. It uses
// no data space that ReserveData holders keep. When the filesystem has no
// room for it the error satisfies errors.Is(err, syscall.ENOSPC) and the file
// is unchanged. mirrors btrfs_buffered_write followed by writeback (cow_file_range)
func (f *FS) WriteAt(id ondisk.InodeRef, off uint64, data []byte) (int, error) {
	return f.WriteAtReserved(id, off, data, 0)
}

// WriteAtReserved is WriteAt for the writeback of buffered data: besides
// unreserved space it may use reserved bytes that the caller holds with
// ReserveData, and it releases them when it succeeds (after an error the
// caller still holds them). Parts that go in place (NODATACOW or
// preallocated extents, see CanNocow) need no data space at all.
// mirrors the writeback of delalloc (run_delalloc_range)
func (f *FS) WriteAtReserved(id ondisk.InodeRef, off uint64, data []byte, reserved uint64) (int, error) {
	return f.writeAt(id, off, data, reserved, false, nil)
}

// WriteAtHeld is WriteAtReserved for the writeback of data buffered with
// metadata held for it (HoldMeta): the write may use that metadata.
func (f *FS) WriteAtHeld(id ondisk.InodeRef, off uint64, data []byte, reserved uint64) (int, error) {
	return f.writeAt(id, off, data, reserved, true, nil)
}

// WriteAtTimes is WriteAt for the writeback of data buffered earlier: the
// write happened when it was buffered, so the inode's mtime becomes mtime
// and its ctime ctime (never older than it was), or they stay as they are
// where zero, in the same operation (a SETATTR of times cannot come in
// between and be undone).
func (f *FS) WriteAtTimes(id ondisk.InodeRef, off uint64, data []byte, mtime, ctime time.Time) (int, error) {
	return f.WriteAtTimesReserved(id, off, data, mtime, ctime, 0)
}

// WriteAtTimesReserved is WriteAtTimes that may use reserved bytes the
// caller holds with ReserveData, as WriteAtReserved.
func (f *FS) WriteAtTimesReserved(id ondisk.InodeRef, off uint64, data []byte, mtime, ctime time.Time, reserved uint64) (int, error) {
	return f.writeAtTimes(id, off, data, mtime, ctime, reserved, false)
}

// WriteAtTimesHeld is WriteAtTimesReserved that may use the metadata held
// for buffered data, as WriteAtHeld.
func (f *FS) WriteAtTimesHeld(id ondisk.InodeRef, off uint64, data []byte, mtime, ctime time.Time, reserved uint64) (int, error) {
	return f.writeAtTimes(id, off, data, mtime, ctime, reserved, true)
}

func (f *FS) writeAtTimes(id ondisk.InodeRef, off uint64, data []byte, mtime, ctime time.Time, reserved uint64, held bool) (int, error) {
	return f.writeAt(id, off, data, reserved, held, func(x *item.InodeItem, oldM, oldC item.Timespec) {
		x.Mtime, x.Ctime = oldM, oldC
		if !mtime.IsZero() {
			x.Mtime = item.TimespecOf(mtime)
		}
		if !ctime.IsZero() && ctime.After(oldC.Time()) {
			x.Ctime = item.TimespecOf(ctime)
		}
	})
}

// writeAt is WriteAtReserved; held: it may use metadata held for buffered
// data (HoldMeta); times, if set, then sets the inode's times from those
// it had before.
func (f *FS) writeAt(id ondisk.InodeRef, off uint64, data []byte, reserved uint64, held bool, times func(x *item.InodeItem, oldM, oldC item.Timespec)) (int, error) {
	err := f.runReserved(reserved, func(o *op) error {
		if held {
			o.h.UseHeldMeta()
		}
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if !isReg(x.Mode) {
			if isDir(x.Mode) {
				return errf(syscall.EISDIR, "write %v", id)
			}
			return errf(syscall.EINVAL, "write %v: not a regular file", id)
		}
		oldM, oldC := x.Mtime, x.Ctime
		if err := o.write(id, x, off, data); err != nil {
			return err
		}
		if times != nil {
			times(x, oldM, oldC)
		}
		return o.putInode(id, x)
	})
	if err != nil {
		return 0, err
	}
	return len(data), nil
}

// write changes the inode's data and size (the caller stores x). It
// reserves the metadata it needs and allocates its data before it changes
// anything.
func (o *op) write(id ondisk.InodeRef, x *item.InodeItem, off uint64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	end := off + uint64(len(data))
	if end < off || end > maxFileSize {
		return errf(syscall.EFBIG, "write %v at %d+%d", id, off, len(data))
	}
	newSize := max(x.Size, end)
	inl, err := o.inlineExtent(id)
	if err != nil {
		return err
	}
	if o.f.canInline(newSize) {
		empty := inl == nil && x.Size == 0
		if empty {
			has, err := o.hasExtents(id)
			if err != nil {
				return err
			}
			empty = !has
		}
		if inl != nil || empty {
			return o.writeInline(id, x, inl, off, data, newSize)
		}
	}
	ss := o.f.sectorSize
	st := &store{}
	start, buf, err := o.sectorRange(id, x, off, data)
	if err != nil {
		return err
	}
	if x.Flags&item.InodeCompress != 0 {
		if st.prop, err = o.propCompression(id); err != nil {
			return err
		}
	}
	if inl != nil && start >= ss {
		// the inline extent lies before the range: it becomes a regular one
		if err := o.addUninline(st, id, x, inl); err != nil {
			return err
		}
	}
	if err := o.addRange(st, id, x, start, buf); err != nil {
		return err
	}
	if err := o.reserveStore(id, st, itemsInode+itemsHoles, false); err != nil {
		return fmt.Errorf("write %v at %d+%d: %w", id, off, len(data), err)
	}
	if err := o.applyStore(id, x, st); err != nil {
		return err
	}
	if newSize > x.Size {
		oldEnd := alignUp(x.Size, ss)
		x.Size = newSize
		if err := o.fillHoles(id, oldEnd, alignDown(off, ss)); err != nil {
			return err
		}
	}
	o.touch(x, true)
	return nil
}

// writeInline stores the whole new content of a small file inline.
func (o *op) writeInline(id ondisk.InodeRef, x *item.InodeItem, inl *fext, off uint64, data []byte, newSize uint64) error {
	if err := o.reserve(itemsInode + 2); err != nil {
		return fmt.Errorf("write %v at %d+%d: %w", id, off, len(data), err)
	}
	content := make([]byte, newSize)
	if inl != nil {
		old, err := o.inlineData(id, inl)
		if err != nil {
			return err
		}
		copy(content, old[:min(uint64(len(old)), x.Size)])
	}
	copy(content[off:], data)
	if err := o.replaceInline(id, x, inl, content); err != nil {
		return err
	}
	x.Size = newSize
	o.touch(x, true)
	return nil
}

// sectorRange returns the whole sectors a write of data at off changes,
// with the bytes they will hold: the parts of the first and last sector the
// write does not cover are read back.
func (o *op) sectorRange(id ondisk.InodeRef, x *item.InodeItem, off uint64, data []byte) (uint64, []byte, error) {
	ss := o.f.sectorSize
	start := alignDown(off, ss)
	end := alignUp(off+uint64(len(data)), ss)
	if start == off && end == off+uint64(len(data)) {
		// whole sectors: stored as they are (nothing keeps them after the
		// write, and nothing changes them), no copy of a large writeback
		return start, data, nil
	}
	buf := make([]byte, end-start)
	if off > start {
		head, err := o.readRange(id, x, start, int(ss))
		if err != nil {
			return 0, nil, err
		}
		copy(buf, head)
	}
	if tail := off + uint64(len(data)); tail < end && (end-ss > start || off == start) {
		last, err := o.readRange(id, x, end-ss, int(ss))
		if err != nil {
			return 0, nil, err
		}
		copy(buf[end-ss-start:], last)
	}
	copy(buf[off-start:], data)
	return start, buf, nil
}

// cowPiece is one new extent of a copy-on-write store.
type cowPiece struct {
	off  uint64 // file offset
	ram  uint64 // file bytes it holds
	disk []byte // what goes on disk: the bytes, or compressed and padded
	alg  compress.Alg
	addr ondisk.LogicalAddr
	// grows, when set, is the file's tail this piece extends on disk
	// (tail.go): no new item, the tail's item grows by ram.
	grows *tail
}

// storeSeg is one part of a store: sector-aligned file bytes at a, written
// in place over e, or (e nil) to new extents (pieces, once allocated).
type storeSeg struct {
	a      uint64
	buf    []byte
	e      *fext
	alg    compress.Alg // for new extents
	pieces []cowPiece
}

// store is a planned write of sector-aligned file ranges, made in three
// steps so that a lack of space changes nothing: addRange (and addUninline,
// addZero) work out the segments and what they need, reserveStore reserves
// the metadata and allocates every new extent, applyStore changes the
// trees. mirrors the split of btrfs_buffered_write (reserve) and
// run_delalloc_range (allocate, insert)
type store struct {
	segs  []storeSeg
	need  uint64 // data bytes of the copy-on-write segments
	items int    // metadata items of the extents and checksums
	// prop is the algorithm of the inode's btrfs.compression property, if
	// any: it wins over the mount's (prop.go)
	prop compress.Alg
}

// addRange adds the sector-aligned buf at start: in place where the file is
// NODATACOW or preallocated and the disk extent is not shared, by COW
// everywhere else. mirrors run_delalloc_nocow
func (o *op) addRange(st *store, id ondisk.InodeRef, x *item.InodeItem, start uint64, buf []byte) error {
	end := start + uint64(len(buf))
	es, err := o.extents(id, start, end)
	if err != nil {
		return err
	}
	st.items += manyItems(len(es)) + 2 // dropped, trimmed, split
	if x.Flags&(item.InodeNoDataCow|item.InodePrealloc) == 0 {
		st.addCow(o.f, x, start, buf)
		return nil
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
			st.addCow(o.f, x, pos, buf[pos-start:a-start])
		}
		st.segs = append(st.segs, storeSeg{a: a, buf: buf[a-start : b-start], e: e})
		st.items += 2 + o.f.csumItemsFor(x, b-a) // the prealloc extent splits in up to 3
		pos = b
	}
	if pos < end {
		st.addCow(o.f, x, pos, buf[pos-start:])
	}
	return nil
}

// addCow adds a copy-on-write segment.
func (st *store) addCow(f *FS, x *item.InodeItem, a uint64, buf []byte) {
	n := uint64(len(buf))
	alg := f.compressionFor(x)
	if alg != compress.None && st.prop != compress.None {
		alg = st.prop
	}
	st.segs = append(st.segs, storeSeg{a: a, buf: buf, alg: alg})
	st.need += n
	st.items += f.cowItems(n, x.Flags&item.InodeNoDataSum == 0)
}

// csumItemsFor is csumItems for an inode's data (none with NODATASUM).
func (f *FS) csumItemsFor(x *item.InodeItem, n uint64) int {
	if x.Flags&item.InodeNoDataSum != 0 {
		return 0
	}
	return f.csumItems(n)
}

// addUninline adds the rewrite of the inline extent inl as a regular
// one-sector extent, before the file grows past what inline extents hold.
func (o *op) addUninline(st *store, id ondisk.InodeRef, x *item.InodeItem, inl *fext) error {
	data, err := o.inlineData(id, inl)
	if err != nil {
		return err
	}
	buf := make([]byte, o.f.sectorSize)
	copy(buf, data[:min(uint64(len(data)), x.Size)])
	st.addCow(o.f, x, 0, buf)
	st.items += itemsUninline
	return nil
}

// reserveStore reserves metadata for the store and extra items, checks
// the data space and allocates the new extents; nothing has changed when it
// fails.
func (o *op) reserveStore(id ondisk.InodeRef, st *store, extra int, forDelete bool) error {
	var err error
	if forDelete {
		err = o.reserveForDelete(st.items + extra)
	} else {
		err = o.reserve(st.items + extra)
	}
	if err != nil {
		return err
	}
	return o.allocStore(id, st)
}

// allocStore allocates (and compresses) the new extents of a store.
func (o *op) allocStore(id ondisk.InodeRef, st *store) error {
	if err := o.ensureData(st.need); err != nil {
		return err
	}
	for i := range st.segs {
		s := &st.segs[i]
		if s.e != nil {
			continue
		}
		if err := o.planCow(id, s); err != nil {
			return err
		}
	}
	return nil
}

// applyStore changes the file as planned. Every data write is issued
// before any item changes, so a failed write (an I/O error) leaves the
// file's items as they were; the new extents it allocated are given back
// at commit. mirrors the kernel inserting file extent items only when the
// ordered extent's I/O completed (btrfs_finish_ordered_io)
func (o *op) applyStore(id ondisk.InodeRef, x *item.InodeItem, st *store) error {
	for i := range st.segs {
		if err := o.writeSegData(&st.segs[i]); err != nil {
			return err
		}
	}
	for i := range st.segs {
		s := &st.segs[i]
		if s.e != nil {
			if err := o.markInPlace(id, x, s.e, s.a, s.buf); err != nil {
				return err
			}
			continue
		}
		if err := o.applyCow(id, x, s); err != nil {
			return err
		}
	}
	return nil
}

// writeSegData writes a segment's disk bytes: in place behind its extent,
// or to the extents planCow allocated.
func (o *op) writeSegData(s *storeSeg) error {
	if s.e != nil {
		return o.writeData(s.e.DiskBytenr+ondisk.LogicalAddr(s.e.Offset+(s.a-s.e.off)), s.buf)
	}
	for _, p := range s.pieces {
		if err := o.writeData(p.addr, p.disk); err != nil {
			return err
		}
	}
	return nil
}

// planCow cuts a copy-on-write segment into extents and allocates them:
// compressed chunks of up to 128 KiB when the inode compresses and that
// saves a sector, else extents of up to 128 MiB (smaller when free space is
// fragmented). mirrors cow_file_range / compress_file_range (allocation)
func (o *op) planCow(id ondisk.InodeRef, s *storeSeg) error {
	alg, buf := s.alg, s.buf
	for pos := 0; pos < len(buf); {
		n := min(len(buf)-pos, maxExtent)
		if alg != compress.None {
			n = min(n, maxCompressedChunk)
			ok, err := o.planCompressed(s, s.a+uint64(pos), buf[pos:pos+n], alg)
			if err != nil {
				return err
			}
			if ok {
				pos += n
				continue
			}
		}
		if err := o.planPlain(id, s, s.a+uint64(pos), buf[pos:pos+n]); err != nil {
			return err
		}
		pos += n
	}
	return nil
}

// planPlain allocates uncompressed extents for chunk at file offset off;
// the first piece of a segment may grow the file's tail instead (tail.go).
func (o *op) planPlain(id ondisk.InodeRef, s *storeSeg, off uint64, chunk []byte) error {
	if len(s.pieces) == 0 && s.alg == compress.None {
		t := o.f.tails[id]
		addr, n, err := o.growTail(id, off, uint64(len(chunk)))
		if err != nil {
			return fmt.Errorf("write at %d: %w", off, err)
		}
		if n > 0 {
			s.pieces = append(s.pieces, cowPiece{off: off, ram: n, disk: chunk[:n], addr: addr, grows: &t})
			chunk, off = chunk[n:], off+n
		}
	}
	for len(chunk) > 0 {
		addr, n, err := o.allocData(uint64(len(chunk)))
		if err != nil {
			return fmt.Errorf("write at %d: %w", off, err)
		}
		s.pieces = append(s.pieces, cowPiece{off: off, ram: n, disk: chunk[:n], addr: addr})
		if s.alg == compress.None {
			o.newTail(id, off, addr, n)
		}
		chunk, off = chunk[n:], off+n
	}
	return nil
}

// planCompressed allocates a compressed extent for chunk when compressing
// saves at least a sector; false means the caller stores it plain.
func (o *op) planCompressed(s *storeSeg, off uint64, chunk []byte, alg compress.Alg) (bool, error) {
	ss := o.f.sectorSize
	out, ok, err := compress.Compress(alg, chunk, int(ss))
	if err != nil {
		return false, fmt.Errorf("compress at %d: %w", off, err)
	}
	if !ok || alignUp(uint64(len(out)), ss)+ss > alignUp(uint64(len(chunk)), ss) {
		return false, nil
	}
	disk := make([]byte, alignUp(uint64(len(out)), ss))
	copy(disk, out)
	addr, err := o.h.AllocData(uint64(len(disk)))
	if errors.Is(err, syscall.ENOSPC) {
		return false, nil // no free range that large: store it plain, in pieces
	}
	if err != nil {
		return false, fmt.Errorf("write at %d: allocate: %w", off, err)
	}
	s.pieces = append(s.pieces, cowPiece{off: off, ram: uint64(len(chunk)), disk: disk, alg: alg, addr: addr})
	return true, nil
}

// applyCow replaces the segment's file range with its allocated extents.
// mirrors insert_reserved_file_extent for each ordered extent
func (o *op) applyCow(id ondisk.InodeRef, x *item.InodeItem, s *storeSeg) error {
	freed, err := o.dropExtents(id, s.a, s.a+uint64(len(s.buf)))
	if err != nil {
		return err
	}
	x.NBytes -= freed
	for _, p := range s.pieces {
		if err := o.putCsums(x, p.addr, p.disk); err != nil {
			return err
		}
		if p.grows != nil {
			if err := o.growItem(id, *p.grows, p.ram); err != nil {
				return err
			}
			x.NBytes += p.ram
			continue
		}
		e := fext{p.off, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: p.ram,
			Compression: uint8(p.alg), Type: item.FileExtentReg, DiskBytenr: p.addr,
			DiskNumBytes: uint64(len(p.disk)), NumBytes: p.ram}}
		if err := o.insertExtent(id, e); err != nil {
			return err
		}
		x.NBytes += p.ram
		if p.alg != compress.None {
			o.noteCompression(p.alg)
		}
	}
	return nil
}

// growItem makes the file extent item of tail t cover add more bytes of
// its grown disk extent (growTail).
func (o *op) growItem(id ondisk.InodeRef, t tail, add uint64) error {
	tr, err := o.tree(id.Root)
	if err != nil {
		return err
	}
	n := t.size + add
	e := fext{t.off, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: n,
		Type: item.FileExtentReg, DiskBytenr: t.addr, DiskNumBytes: n, NumBytes: n}}
	if err := tr.UpdateItem(o.a, extentKey(id.Ino, t.off), e.Bytes()); err != nil {
		return fmt.Errorf("grow file extent %d of %v: %w", t.off, id, err)
	}
	return nil
}

// allocData reserves a data extent of up to want bytes (at least one sector),
// settling for less when free space is fragmented.
func (o *op) allocData(want uint64) (ondisk.LogicalAddr, uint64, error) {
	ss := o.f.sectorSize
	for n := want; ; n = max(alignDown(n/2, ss), ss) {
		addr, err := o.h.AllocData(n)
		if err == nil {
			return addr, n, nil
		}
		if !errors.Is(err, syscall.ENOSPC) || n == ss {
			return 0, 0, fmt.Errorf("allocate %d bytes of data: %w", want, err)
		}
	}
}

// writeData writes disk bytes at addr.
func (o *op) writeData(addr ondisk.LogicalAddr, disk []byte) error {
	if err := o.h.WriteData(addr, disk); err != nil {
		return fmt.Errorf("write data at %d: %w", addr, err)
	}
	return nil
}

// putCsums adds the checksums of disk bytes written at addr, unless the
// inode has NODATASUM.
func (o *op) putCsums(x *item.InodeItem, addr ondisk.LogicalAddr, disk []byte) error {
	if x.Flags&item.InodeNoDataSum != 0 {
		return nil
	}
	if err := o.h.AddCsums(addr, disk); err != nil {
		return fmt.Errorf("checksum data at %d: %w", addr, err)
	}
	return nil
}

// compressionFor picks the algorithm for an inode's new extents.
// mirrors inode_need_compress
func (f *FS) compressionFor(x *item.InodeItem) compress.Alg {
	if x.Flags&(item.InodeNoDataCow|item.InodeNoDataSum|item.InodeNoCompress) != 0 {
		return compress.None
	}
	if f.opts.Compress == compress.None && x.Flags&item.InodeCompress != 0 {
		return compress.Zlib
	}
	return f.opts.Compress
}

// noteCompression sets the incompat flag an algorithm needs in the
// superblock the commit writes. mirrors btrfs_set_fs_incompat
func (o *op) noteCompression(alg compress.Alg) {
	var flag uint64
	switch alg {
	case compress.LZO:
		flag = ondisk.IncompatCompressLZO
	case compress.Zstd:
		flag = ondisk.IncompatCompressZstd
	default:
		return
	}
	if o.h.Super().IncompatFlags&flag == 0 {
		o.h.Super().IncompatFlags |= flag
	}
}
