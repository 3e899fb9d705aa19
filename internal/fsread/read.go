package fsread

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/datacsum"
	"github.com/gobtrfs/gobtrfs/internal/extentmap"
	"github.com/gobtrfs/gobtrfs/internal/fileread"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// ReadData fills p with file bytes of n from off (the caller clipped p to
// i_size). Regular extents are read by the shared engine (internal/fileread):
// checksums verified, the other copy tried, compressed extents inflated once.
func (f *Engine) ReadData(n ondisk.InodeRef, x *item.InodeItem, p []byte, off uint64) (int, error) {
	in := fileread.Inode{InodeRef: n, NoDataSum: x != nil && x.Flags&item.InodeNoDataSum != 0}
	sums := f.dataCsums()
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
			err = f.data.Read(in, sums, &fileread.Extent{Start: e.Start, DiskBytenr: e.DiskBytenr,
				DiskNumBytes: e.DiskNumBytes, Offset: e.Offset, RAMBytes: e.RAMBytes, Compression: e.Compression},
				chunk, off)
		}
		if err != nil {
			return done, err
		}
		done += len(chunk)
		off += uint64(len(chunk))
	}
	return done, nil
}

// dataCsums is the csum tree data is verified against, or nil when data is
// not verified (Options.NoVerifyDataCsum, or no csum tree).
func (f *Engine) dataCsums() *datacsum.Tree {
	if f.opts.NoVerifyDataCsum {
		return nil
	}
	return f.csums
}

// inlineData returns an inline extent's file bytes, decompressed.
func (f *Engine) inlineData(n ondisk.InodeRef, e *item.FileExtentItem) ([]byte, error) {
	if e.Compression == 0 {
		return e.Inline, nil
	}
	out, err := compress.Decompress(compress.Alg(e.Compression), e.Inline, int(e.RAMBytes), int(f.SectorSize()))
	if err != nil {
		return nil, fmt.Errorf("%v inline extent: %w", n, corruptf("decompress: %w", err))
	}
	return out, nil
}

func (f *Engine) readInline(n ondisk.InodeRef, e *extentmap.Extent, p []byte, off uint64) error {
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
