package fsops

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// maxInlineData is BTRFS_MAX_INLINE_DATA_SIZE.
func (f *FS) maxInlineData() int { return f.maxItemSize() - item.FileExtentInlineDataStart }

// canInline reports whether a whole file of size bytes is stored inline:
// smaller than a sector and within max_inline. mirrors can_cow_file_range_inline
func (f *FS) canInline(size uint64) bool {
	return size > 0 && size < f.sectorSize && f.opts.MaxInline > 0 &&
		size <= uint64(f.opts.MaxInline) && size <= uint64(f.maxInlineData())
}

// inlineExtent returns the inline extent of id, or nil.
func (o *op) inlineExtent(id ondisk.InodeRef) (*fext, error) {
	t, err := o.tree(id.Root)
	if err != nil {
		return nil, err
	}
	data, ok, err := t.Lookup(extentKey(id.Ino, 0))
	if err != nil {
		return nil, fmt.Errorf("file extent 0 of %v: %w", id, err)
	}
	if !ok {
		return nil, nil
	}
	fi, err := item.DecodeFileExtentItem(data)
	if err != nil {
		return nil, corruptf("file extent 0 of %v: %w", id, err)
	}
	if !fi.IsInline() {
		return nil, nil
	}
	return &fext{0, fi}, nil
}

// insertInline stores data as the inline extent of id. mirrors insert_inline_extent
func (o *op) insertInline(id ondisk.InodeRef, data []byte) error {
	e := fext{0, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: uint64(len(data)),
		Type: item.FileExtentInline, Inline: append([]byte(nil), data...)}}
	return o.insertExtent(id, e)
}

// replaceInline makes content the file's only (inline) extent, dropping the
// old inline extent old if any; nbytes follows.
func (o *op) replaceInline(id ondisk.InodeRef, x *item.InodeItem, old *fext, content []byte) error {
	if old != nil {
		t, err := o.tree(id.Root)
		if err != nil {
			return err
		}
		if err := t.DeleteItem(o.a, extentKey(id.Ino, 0)); err != nil {
			return fmt.Errorf("replace inline extent of %v: %w", id, err)
		}
		x.NBytes -= old.RAMBytes
	}
	if len(content) == 0 {
		return nil
	}
	if err := o.insertInline(id, content); err != nil {
		return err
	}
	x.NBytes += uint64(len(content))
	return nil
}
