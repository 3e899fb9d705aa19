package fsops

import (
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/datacsum"
	"github.com/gobtrfs/gobtrfs/internal/fileread"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// ReadAt reads up to n bytes of file id at off (fewer at the end of the file).
func (f *FS) ReadAt(id ondisk.InodeRef, off uint64, n int) ([]byte, error) {
	buf := make([]byte, n)
	k, _, err := f.ReadInto(id, off, buf)
	if err != nil {
		return nil, err
	}
	return buf[:k], nil
}

// ReadInto reads file id at off into p, up to the end of the file, and
// returns how many bytes it filled and the inode item the read saw (also
// with an error once the inode was read: a caller deciding on the atime
// needs no second lookup; a zero Mode means it was not). It runs as a
// view: no clock, no space accounting, no allocation for the data. When
// the transaction lock is taken and the last commit holds all of the
// inode, it reads that commit's trees instead of waiting (view.go).
func (f *FS) ReadInto(id ondisk.InodeRef, off uint64, p []byte) (int, item.InodeItem, error) {
	var k int
	var x item.InodeItem
	fn := func(o *op) error {
		k, x = 0, item.InodeItem{}
		ip, err := o.inode(id)
		if err != nil {
			return err
		}
		x = *ip
		if isDir(x.Mode) {
			return errf(syscall.EISDIR, "read %v", id)
		}
		if off >= x.Size {
			return nil
		}
		k = int(min(uint64(len(p)), x.Size-off))
		return o.readRangeInto(id, &x, off, p[:k])
	}
	err := f.readInode(id, fn)
	if err != nil {
		k = 0
	}
	return k, x, err
}

// Readlink returns a symlink's target.
func (f *FS) Readlink(id ondisk.InodeRef) (string, error) {
	var s string
	err := f.run(func(o *op) error {
		x, err := o.inode(id)
		if err != nil {
			return err
		}
		if !isLnk(x.Mode) {
			return errf(syscall.EINVAL, "readlink %v", id)
		}
		// a target is one inline extent shorter than PATH_MAX, as the
		// kernel writes it; anything else is a crafted inode
		if x.Size == 0 || x.Size >= pathMax {
			return corruptf("readlink %v: symlink size %d", id, x.Size)
		}
		es, err := o.extents(id, 0, x.Size)
		if err != nil {
			return err
		}
		if len(es) != 1 || !es[0].IsInline() || es[0].off != 0 {
			return corruptf("readlink %v: target is not one inline extent", id)
		}
		b, err := o.readRange(id, x, 0, int(x.Size))
		s = string(b)
		return err
	})
	return s, err
}

// pathMax is Linux's PATH_MAX: symlink targets are shorter.
const pathMax = 4096

// readRange returns the n bytes of file id (inode x) at off, zero past its
// size and in holes and preallocated extents. Data on disk is read by the
// shared engine (internal/fileread): checked against the running
// transaction's csum tree (so checksums of data written and not yet
// committed count), from the other copy when one is bad; a sector no copy
// holds intact fails the read with a *fileread.DataError (ErrCorrupt).
func (o *op) readRange(id ondisk.InodeRef, x *item.InodeItem, off uint64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if err := o.readRangeInto(id, x, off, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// readRangeInto is readRange into p (len(p) bytes at off); it zeroes what
// no extent holds.
func (o *op) readRangeInto(id ondisk.InodeRef, x *item.InodeItem, off uint64, p []byte) error {
	n := len(p)
	limit := x.Size
	if n == 0 || off >= limit {
		clear(p)
		return nil
	}
	end := min(off+uint64(n), limit)
	es, err := o.extents(id, off, end)
	if err != nil {
		return err
	}
	pos := off // p is filled (or zeroed) below pos
	for i := range es {
		e := &es[i]
		a := max(e.off, off)
		b := min(e.end(o.f.sectorSize), end)
		if a >= b || !e.data() {
			continue
		}
		if a > pos {
			clear(p[pos-off : a-off])
		}
		if err := o.readExtent(id, x, e, a, p[a-off:b-off]); err != nil {
			return err
		}
		pos = max(pos, b)
	}
	clear(p[pos-off:])
	return nil
}

// readExtent fills dst with the file bytes at pos that e holds.
func (o *op) readExtent(id ondisk.InodeRef, x *item.InodeItem, e *fext, pos uint64, dst []byte) error {
	if e.IsInline() {
		data, err := o.inlineData(id, e)
		if err != nil {
			return err
		}
		if rel := pos - e.off; rel < uint64(len(data)) {
			copy(dst, data[rel:])
		}
		return nil
	}
	in := fileread.Inode{InodeRef: id, NoDataSum: x.Flags&item.InodeNoDataSum != 0}
	var sums *datacsum.Tree
	if !in.NoDataSum {
		t, err := o.tree(ondisk.CsumTreeObjectID)
		if err != nil {
			return fmt.Errorf("read data of %v at %d: %w", id, pos, err)
		}
		sums = &datacsum.Tree{T: t, SectorSize: uint32(o.f.sectorSize), Type: o.f.info.Csum}
	}
	return o.f.data.Read(in, sums, &fileread.Extent{Start: e.off, DiskBytenr: e.DiskBytenr,
		DiskNumBytes: e.DiskNumBytes, Offset: e.Offset, RAMBytes: e.RAMBytes, Compression: e.Compression}, dst, pos)
}

// inlineData returns the uncompressed bytes of an inline extent (ram_bytes long).
func (o *op) inlineData(id ondisk.InodeRef, e *fext) ([]byte, error) {
	if e.Compression == item.CompressNone {
		out := make([]byte, e.RAMBytes)
		copy(out, e.Inline)
		return out, nil
	}
	data, err := compress.Decompress(compress.Alg(e.Compression), e.Inline, int(e.RAMBytes), int(o.f.sectorSize))
	if err != nil {
		return nil, corruptf("decompress inline extent of %v: %w", id, err)
	}
	return data, nil
}
