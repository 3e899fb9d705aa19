package extent

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Trees gives this package the writable trees of the running transaction.
type Trees interface {
	Tree(id ondisk.ObjectID) (*ctree.Tree, error)
	Alloc() ctree.Allocator
}

// Manager applies reference changes to the extent tree.
type Manager struct {
	Groups     *blockgroup.Manager
	Refs       *delayedref.Queue
	NodeSize   uint32
	SectorSize uint32
	Csum       csum.Type
	// Skinny is the SKINNY_METADATA incompat flag.
	Skinny bool
	// FreeSpaceTree is set when the filesystem has a free space tree to keep in step.
	FreeSpaceTree bool
	// FirstKey returns the first key of a tree block written in this
	// transaction (for tree_block_info on non-skinny filesystems).
	FirstKey func(addr ondisk.LogicalAddr) (ondisk.Key, bool)
	// Freed is told about every extent whose last reference went away (the
	// transaction forgets cached copies of tree blocks).
	Freed func(addr ondisk.LogicalAddr, n uint64, isData bool)
}

// maxExtentItemSize mirrors BTRFS_MAX_EXTENT_ITEM_SIZE.
func (m *Manager) maxExtentItemSize() int {
	return diskio.LeafDataSize(m.NodeSize)/16 - ondisk.ItemHeaderSize
}

// corrupt marks an inconsistency found in the extent tree.
func corrupt(format string, args ...any) error { return diskio.Corruptf(format, args...) }

// extentRec is a decoded EXTENT_ITEM or METADATA_ITEM.
type extentRec struct {
	key    ondisk.Key
	refs   uint64
	gen    ondisk.Generation
	flags  uint64
	info   item.TreeBlockInfo // EXTENT_ITEM of a tree block only
	inline []item.InlineRef
}

func (r *extentRec) bytes() []byte {
	if r.key.Type == ondisk.MetadataItemKey {
		mi := item.MetadataItem{Refs: r.refs, Generation: r.gen, Flags: r.flags, Inline: r.inline}
		return mi.Bytes()
	}
	ei := item.ExtentItem{Refs: r.refs, Generation: r.gen, Flags: r.flags, TreeBlock: r.info, Inline: r.inline}
	return ei.Bytes()
}

func (r *extentRec) size() int { return len(r.bytes()) }

func decodeExtentRec(k ondisk.Key, data []byte) (*extentRec, error) {
	r := &extentRec{key: k}
	if k.Type == ondisk.MetadataItemKey {
		mi, err := item.DecodeMetadataItem(data)
		if err != nil {
			return nil, corrupt("extent item %v: %w", k, err)
		}
		r.refs, r.gen, r.flags, r.inline = mi.Refs, mi.Generation, mi.Flags, mi.Inline
		return r, nil
	}
	ei, err := item.DecodeExtentItem(data)
	if err != nil {
		return nil, corrupt("extent item %v: %w", k, err)
	}
	r.refs, r.gen, r.flags, r.info, r.inline = ei.Refs, ei.Generation, ei.Flags, ei.TreeBlock, ei.Inline
	return r, nil
}

// inlineSeq is the sort key of an inline ref within its type (descending).
func inlineSeq(r *item.InlineRef) uint64 {
	if r.Type == ondisk.ExtentDataRefKey {
		return r.DataRef.Hash()
	}
	return r.Offset
}

// refToInline converts a delayed ref to its inline form with count.
func refToInline(ref delayedref.Ref, count uint32) item.InlineRef {
	switch ref.Type {
	case ondisk.TreeBlockRefKey:
		return item.InlineRef{Type: ref.Type, Offset: uint64(ref.Root)}
	case ondisk.SharedBlockRefKey:
		return item.InlineRef{Type: ref.Type, Offset: uint64(ref.Parent)}
	case ondisk.ExtentDataRefKey:
		return item.InlineRef{Type: ref.Type, DataRef: item.ExtentDataRef{Root: ref.Root, ObjectID: ref.Owner,
			Offset: ref.Offset, Count: count}}
	default:
		return item.InlineRef{Type: ref.Type, Offset: uint64(ref.Parent), Count: count}
	}
}

// matches reports whether the inline ref is ref.
func matches(ir *item.InlineRef, ref delayedref.Ref) bool {
	if ir.Type != ref.Type {
		return false
	}
	switch ref.Type {
	case ondisk.TreeBlockRefKey:
		return ir.Offset == uint64(ref.Root)
	case ondisk.ExtentDataRefKey:
		return ir.DataRef.Root == ref.Root && ir.DataRef.ObjectID == ref.Owner && ir.DataRef.Offset == ref.Offset
	default:
		return ir.Offset == uint64(ref.Parent)
	}
}

// findInline returns the index of ref among the inline refs, or where it
// would be inserted and false. mirrors lookup_inline_extent_backref
func findInline(refs []item.InlineRef, ref delayedref.Ref) (int, bool) {
	want := refToInline(ref, 0)
	seq := inlineSeq(&want)
	for i := range refs {
		r := &refs[i]
		if r.Type > want.Type {
			return i, false
		}
		if r.Type < want.Type {
			continue
		}
		if matches(r, ref) {
			return i, true
		}
		if inlineSeq(r) < seq {
			return i, false
		}
	}
	return len(refs), false
}

// inlineCount is the number of references an inline ref stands for.
func inlineCount(r *item.InlineRef) uint64 {
	switch r.Type {
	case ondisk.ExtentDataRefKey:
		return uint64(r.DataRef.Count)
	case ondisk.SharedDataRefKey:
		return uint64(r.Count)
	}
	return 1
}

func errorf(op string, bytenr ondisk.LogicalAddr, err error) error {
	return fmt.Errorf("%s extent %d: %w", op, uint64(bytenr), err)
}
