package fsread

import (
	"github.com/gobtrfs/gobtrfs/internal/extentmap"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// readAheadSpans is how many following extents of the same leaf a cache
// miss also caches: they cost no I/O and sequential readers need them next.
const readAheadSpans = 16

// mapping returns the whole extent of n containing file offset off, from the
// cache or, on a miss, from the subvolume tree (then cached).
func (f *Engine) mapping(n ondisk.InodeRef, off uint64) (extentmap.Extent, error) {
	if e, ok := f.extents.Lookup(n, off); ok {
		return e, nil
	}
	if n.IsEmptySubvolDir() {
		return extentmap.Extent{Start: 0, End: ^uint64(0), Kind: extentmap.Hole}, nil
	}
	t, err := f.Tree(n.Root)
	if err != nil {
		return extentmap.Extent{}, err
	}
	spans, err := inode.MapAt(t, n.Ino, off, readAheadSpans)
	if err != nil {
		return extentmap.Extent{}, err
	}
	exts := make([]extentmap.Extent, len(spans))
	for i, s := range spans {
		exts[i] = toExtent(s)
	}
	f.extents.Insert(n, exts...)
	return exts[0], nil
}

// toExtent converts an on-disk span to a cache entry.
func toExtent(s inode.Span) extentmap.Extent {
	e := extentmap.Extent{Start: s.Start, End: s.End, Kind: extentmap.Hole}
	x := s.Extent
	if x == nil {
		return e
	}
	e.Compression = x.Compression
	e.Generation = uint64(x.Generation)
	e.RAMBytes = x.RAMBytes
	switch {
	case x.Type == inode.ExtentInline:
		e.Kind = extentmap.Inline
		e.Inline = x.Inline
	case x.DiskBytenr == 0:
		e.Kind = extentmap.Hole
	case x.Type == inode.ExtentPrealloc:
		e.Kind = extentmap.Prealloc
	default:
		e.Kind = extentmap.Regular
	}
	e.DiskBytenr = x.DiskBytenr
	e.DiskNumBytes = x.DiskNumBytes
	e.Offset = x.Offset
	return e
}
