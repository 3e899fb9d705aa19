package gobtrfs

import (
	"fmt"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/extentmap"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// maxPiece bounds one disk read of uncompressed data, so a large ReadAt
// streams through a bounded buffer.
const maxPiece = 1 << 20

var pieceBufs = sync.Pool{New: func() any { b := make([]byte, maxPiece+2*65536); return &b }}

// readData fills p with file bytes of n from off (the caller clipped p to i_size).
func (f *FS) readData(n node, x *item.InodeItem, p []byte, off uint64) (int, error) {
	done := 0
	for done < len(p) {
		e, err := f.mapping(n, off)
		if err != nil {
			return done, err
		}
		if !e.Contains(off) {
			return done, fmt.Errorf("%v offset %d: %w", n, off, corruptf("extent map [%d, %d) does not cover it", e.Start, e.End))
		}
		chunk := p[done:min(uint64(len(p)), uint64(done)+e.End-off)]
		switch e.Kind {
		case extentmap.Hole, extentmap.Prealloc:
			clear(chunk)
		case extentmap.Inline:
			err = f.readInline(n, &e, chunk, off)
		case extentmap.Regular:
			if e.Compression != 0 {
				err = f.readCompressed(n, &e, chunk, off)
			} else {
				err = f.readPlain(n, x, &e, chunk, off)
			}
		}
		if err != nil {
			return done, err
		}
		done += len(chunk)
		off += uint64(len(chunk))
	}
	return done, nil
}

// inlineData returns an inline extent's file bytes, decompressed.
func (f *FS) inlineData(n node, e *item.FileExtentItem) ([]byte, error) {
	if e.Compression == 0 {
		return e.Inline, nil
	}
	out, err := compress.Decompress(compress.Alg(e.Compression), e.Inline, int(e.RAMBytes), int(f.SectorSize()))
	if err != nil {
		return nil, fmt.Errorf("%v inline extent: %w", n, corruptf("decompress: %v", err))
	}
	return out, nil
}

func (f *FS) readInline(n node, e *extentmap.Extent, p []byte, off uint64) error {
	data := e.Inline
	if e.Compression != 0 {
		fe := item.FileExtentItem{Compression: e.Compression, RAMBytes: e.RAMBytes, Inline: e.Inline}
		var err error
		if data, err = f.inlineData(n, &fe); err != nil {
			return err
		}
	}
	rel := off - e.Start
	c := 0
	if rel < uint64(len(data)) {
		c = copy(p, data[rel:])
	}
	clear(p[c:])
	return nil
}

// verifying reports whether data reads of inode x are checked against the csum tree.
func (f *FS) verifying(x *item.InodeItem) bool {
	return !f.opts.NoVerifyDataCsum && f.csums != nil && (x == nil || x.Flags&item.InodeNoDataSum == 0)
}

// readPlain reads uncompressed extent bytes, verifying whole sectors.
func (f *FS) readPlain(n node, x *item.InodeItem, e *extentmap.Extent, p []byte, off uint64) error {
	logical := uint64(e.DiskBytenr) + e.Offset + (off - e.Start)
	if !f.verifying(x) {
		return f.readAnyCopy(n, p, off, logical)
	}
	ss := uint64(f.SectorSize())
	if start := logical &^ (ss - 1); uint64(len(p)) < ss && logical+uint64(len(p)) <= start+ss {
		return f.readSubSector(n, p, off, logical, start)
	}
	var bufp *[]byte
	defer func() {
		if bufp != nil {
			pieceBufs.Put(bufp)
		}
	}()
	for len(p) > 0 {
		if logical%ss == 0 && uint64(len(p)) >= ss {
			// aligned: read and verify in place, no bounce buffer
			want := min(uint64(len(p))&^(ss-1), maxPiece)
			if err := f.readVerified(n, p[:want], off, ondisk.LogicalAddr(logical)); err != nil {
				return err
			}
			p, off, logical = p[want:], off+want, logical+want
			continue
		}
		if bufp == nil {
			bufp = pieceBufs.Get().(*[]byte)
		}
		start := logical &^ (ss - 1)
		want := min(uint64(len(p)), maxPiece-(logical-start))
		end := (logical + want + ss - 1) &^ (ss - 1)
		buf := (*bufp)[:end-start]
		if err := f.readVerified(n, buf, off-(logical-start), ondisk.LogicalAddr(start)); err != nil {
			return err
		}
		c := uint64(copy(p[:want], buf[logical-start:]))
		p, off, logical = p[c:], off+c, logical+c
	}
	return nil
}

// readSubSector serves a read inside one sector through the sector cache.
func (f *FS) readSubSector(n node, p []byte, off, logical, start uint64) error {
	rel := int(logical - start)
	if f.sectors.get(ondisk.LogicalAddr(start), rel, p) {
		return nil
	}
	buf := make([]byte, f.SectorSize())
	if err := f.readVerified(n, buf, off-uint64(rel), ondisk.LogicalAddr(start)); err != nil {
		return err
	}
	f.sectors.put(ondisk.LogicalAddr(start), buf)
	copy(p, buf[rel:])
	return nil
}

// readAnyCopy reads without checksums, trying each copy on an I/O error.
func (f *FS) readAnyCopy(n node, p []byte, off, logical uint64) error {
	copies := max(f.info.R.NumCopies(ondisk.LogicalAddr(logical)), 1)
	var err error
	for m := 0; m < copies; m++ {
		if err = f.info.R.ReadLogical(p, ondisk.LogicalAddr(logical), m); err == nil {
			return nil
		}
	}
	return &DataError{Subvol: uint64(n.subvol), Ino: uint64(n.ino), FileOffset: off, Logical: logical, Err: err}
}

// readVerified reads sector-aligned buf at logical and checks it against the
// csum tree, trying every copy (DUP data has two) before giving up. fileOff
// is the file offset of buf[0], for error messages.
func (f *FS) readVerified(n node, buf []byte, fileOff uint64, logical ondisk.LogicalAddr) error {
	sums, err := f.csums.Lookup(logical, uint64(len(buf)))
	if err != nil {
		return &DataError{Subvol: uint64(n.subvol), Ino: uint64(n.ino), FileOffset: fileOff, Logical: uint64(logical), Err: err}
	}
	if miss := sums.Missing(); miss > 0 {
		f.warn(fmt.Sprintf("nocsum %d %d", n.subvol, n.ino), fmt.Sprintf(
			"%v: no data checksum for %d sector(s) at logical %d (file offset %d); not verified",
			n, miss, logical, fileOff))
	}
	ss := int(f.SectorSize())
	copies := max(f.info.R.NumCopies(logical), 1)
	var firstErr error
	for m := 0; m < copies; m++ {
		err := f.info.R.ReadLogical(buf, logical, m)
		if err == nil {
			if bad := f.csums.Verify(sums, 0, buf); bad >= 0 {
				err = &DataError{Subvol: uint64(n.subvol), Ino: uint64(n.ino), FileOffset: fileOff + uint64(bad*ss),
					Logical: uint64(logical) + uint64(bad*ss),
					Err:     corruptf("%s data checksum mismatch (copy %d of %d)", f.info.Csum, m+1, copies)}
			}
		} else {
			err = &DataError{Subvol: uint64(n.subvol), Ino: uint64(n.ino), FileOffset: fileOff,
				Logical: uint64(logical), Err: err}
		}
		if err == nil {
			if m > 0 {
				f.warn(fmt.Sprintf("mirror %d", logical), fmt.Sprintf("%v: copy 1 of logical %d bad (%v); used copy %d",
					n, logical, firstErr, m+1))
			}
			return nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if de, ok := firstErr.(*DataError); ok && copies > 1 {
		de.Err = fmt.Errorf("%w; the other %d cop(ies) are bad too", de.Err, copies-1)
	}
	return firstErr
}

// readCompressed serves p from the decompressed whole extent.
func (f *FS) readCompressed(n node, e *extentmap.Extent, p []byte, off uint64) error {
	data, err := f.decompressed(n, e)
	if err != nil {
		return err
	}
	rel := e.Offset + (off - e.Start)
	c := 0
	if rel < uint64(len(data)) {
		c = copy(p, data[rel:])
	}
	clear(p[c:])
	return nil
}

// decompressed returns the whole decompressed disk extent of e: its
// disk_num_bytes are read (and verified: csums cover the compressed bytes)
// and inflated to ram_bytes. mirrors btrfs_submit_compressed_read + end_compressed_bio_read
func (f *FS) decompressed(n node, e *extentmap.Extent) ([]byte, error) {
	key := decompKey{e.DiskBytenr, e.DiskNumBytes, e.RAMBytes, e.Compression}
	if d := f.decomp.get(key); d != nil {
		return d, nil
	}
	ss := uint64(f.SectorSize())
	if e.DiskNumBytes == 0 || e.DiskNumBytes > 1<<20 || uint64(e.DiskBytenr)%ss != 0 {
		return nil, &DataError{Subvol: uint64(n.subvol), Ino: uint64(n.ino), FileOffset: e.Start,
			Logical: uint64(e.DiskBytenr), Err: corruptf("compressed extent of %d disk bytes", e.DiskNumBytes)}
	}
	raw := make([]byte, (e.DiskNumBytes+ss-1)&^(ss-1))
	var err error
	if f.verifying(nil) {
		err = f.readVerified(n, raw, e.Start, e.DiskBytenr)
	} else {
		err = f.readAnyCopy(n, raw, e.Start, uint64(e.DiskBytenr))
	}
	if err != nil {
		return nil, err
	}
	out, err := compress.Decompress(compress.Alg(e.Compression), raw[:e.DiskNumBytes], int(e.RAMBytes), int(ss))
	if err != nil {
		return nil, &DataError{Subvol: uint64(n.subvol), Ino: uint64(n.ino), FileOffset: e.Start,
			Logical: uint64(e.DiskBytenr), Err: corruptf("decompress: %v", err)}
	}
	f.decomp.put(key, out)
	return out, nil
}
