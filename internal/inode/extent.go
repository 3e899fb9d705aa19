package inode

import (
	"fmt"
	"math"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Span is one piece of a file's map: a stored EXTENT_DATA item, or an
// implicit hole between items (Extent == nil; NO_HOLES filesystems store no
// item for holes). End is math.MaxUint64 for a hole after the last item.
type Span struct {
	Start, End uint64
	Extent     *FileExtent
}

func isExtentKey(k ondisk.Key, ino ondisk.ObjectID) bool {
	return k.ObjectID == ino && k.Type == ondisk.ExtentDataKey
}

func extentAt(p *ctree.Path) (*FileExtent, error) {
	k := p.Key()
	e, err := decodeFileExtent(k.Offset, p.Data())
	if err != nil {
		return nil, fmt.Errorf("item %v in leaf %d: %w", k, p.Leaf().Addr, err)
	}
	return &e, nil // decoding copied Inline: the leaf may be edited or evicted
}

// MapAt returns the span containing file offset off, followed by up to more
// spans that follow it in the same leaf (read without further I/O): whole
// extents exactly as stored, never pieces cut to a request.
// mirrors btrfs_get_extent
func MapAt(t *ctree.Tree, ino ondisk.ObjectID, off uint64, more int) ([]Span, error) {
	spans, err := mapAt(t, ino, off, more)
	if err != nil {
		return nil, fmt.Errorf("map inode %d offset %d (tree %s): %w", ino, off, ondisk.TreeName(t.ID), err)
	}
	return spans, nil
}

func mapAt(t *ctree.Tree, ino ondisk.ObjectID, off uint64, more int) ([]Span, error) {
	p, ok, err := t.SearchBackward(ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: off})
	if err != nil {
		return nil, err
	}
	var prevEnd uint64
	if ok && isExtentKey(p.Key(), ino) {
		e, err := extentAt(p)
		if err != nil {
			return nil, err
		}
		if off < e.End() {
			spans := []Span{{Start: e.FileOffset, End: e.End(), Extent: e}}
			return readAhead(p, ino, spans, more)
		}
		prevEnd = e.End()
	}
	return holeAt(t, ino, off, prevEnd)
}

// holeAt builds the implicit hole around off: from the end of the previous
// extent to the start of the next one.
func holeAt(t *ctree.Tree, ino ondisk.ObjectID, off, prevEnd uint64) ([]Span, error) {
	end := uint64(math.MaxUint64)
	p, ok, err := t.SearchForward(ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: off})
	for ; err == nil && ok; ok, err = p.Next() {
		k := p.Key()
		if !isExtentKey(k, ino) {
			break
		}
		if k.Offset > off {
			end = k.Offset
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return []Span{{Start: prevEnd, End: end}}, nil
}

// readAhead appends the spans after spans[len-1] found in the current leaf.
func readAhead(p *ctree.Path, ino ondisk.ObjectID, spans []Span, more int) ([]Span, error) {
	leaf := p.Leaf()
	for n := 0; n < more && p.Slots[0]+1 < leaf.NumItems(); n++ {
		p.Slots[0]++
		if !isExtentKey(p.Key(), ino) {
			break
		}
		e, err := extentAt(p)
		if err != nil {
			break // leave the damaged item to the lookup that needs it
		}
		last := spans[len(spans)-1].End
		if e.FileOffset < last || e.End() <= e.FileOffset {
			break // overlapping or empty: not ours to judge here
		}
		if e.FileOffset > last {
			spans = append(spans, Span{Start: last, End: e.FileOffset})
		}
		spans = append(spans, Span{Start: e.FileOffset, End: e.End(), Extent: e})
	}
	return spans, nil
}

// Extents calls fn for every EXTENT_DATA item of ino in file order until fn
// returns false.
func Extents(t *ctree.Tree, ino ondisk.ObjectID, fn func(FileExtent) bool) error {
	lo := ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey}
	hi := ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: math.MaxUint64}
	var derr error
	err := t.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		e, err := decodeFileExtent(k.Offset, data)
		if err != nil {
			derr = fmt.Errorf("item %v: %w", k, err)
			return false
		}
		return fn(e)
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("extents of inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	return nil
}
