package item

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Extent item sizes.
const (
	ExtentItemSize    = 24 // refs, generation, flags
	TreeBlockInfoSize = 18 // key, level
)

// Extent item flags.
const (
	ExtentFlagData       = 1 << 0
	ExtentFlagTreeBlock  = 1 << 1
	BlockFlagFullBackref = 1 << 8
)

// TreeBlockInfo is struct btrfs_tree_block_info: the first key and level of
// a tree block, stored in non-skinny EXTENT_ITEMs of tree blocks.
type TreeBlockInfo struct {
	Key   ondisk.Key
	Level uint8
}

// ExtentItem is an EXTENT_ITEM (key: bytenr, EXTENT_ITEM, length) with its
// inline back references. TreeBlock is present on disk only when Flags has
// ExtentFlagTreeBlock.
//
//	0 refs 8 generation 16 flags 24 [tree_block_info(18)] inline refs...
type ExtentItem struct {
	Refs       uint64
	Generation ondisk.Generation
	Flags      uint64
	TreeBlock  TreeBlockInfo
	Inline     []InlineRef
}

// MetadataItem is a skinny METADATA_ITEM (key: bytenr, METADATA_ITEM,
// level): an extent item of a tree block without tree_block_info.
type MetadataItem struct {
	Refs       uint64
	Generation ondisk.Generation
	Flags      uint64
	Inline     []InlineRef
}

func decodeExtentHead(b []byte, what string) (refs uint64, gen ondisk.Generation, flags uint64, err error) {
	if len(b) < ExtentItemSize {
		return 0, 0, 0, short(what, len(b), ExtentItemSize)
	}
	return le.Uint64(b[0:]), ondisk.Generation(le.Uint64(b[8:])), le.Uint64(b[16:]), nil
}

func encodeExtentHead(b []byte, refs uint64, gen ondisk.Generation, flags uint64) {
	le.PutUint64(b[0:], refs)
	le.PutUint64(b[8:], uint64(gen))
	le.PutUint64(b[16:], flags)
}

// DecodeExtentItem parses an EXTENT_ITEM.
func DecodeExtentItem(b []byte) (ExtentItem, error) {
	var e ExtentItem
	var err error
	e.Refs, e.Generation, e.Flags, err = decodeExtentHead(b, "extent item")
	if err != nil {
		return e, err
	}
	p := ExtentItemSize
	if e.Flags&ExtentFlagTreeBlock != 0 {
		if len(b) < p+TreeBlockInfoSize {
			return e, short("extent item tree block info", len(b), p+TreeBlockInfoSize)
		}
		e.TreeBlock = TreeBlockInfo{ondisk.DecodeKey(b[p:]), b[p+ondisk.KeySize]}
		p += TreeBlockInfoSize
	}
	e.Inline, err = DecodeInlineRefs(b[p:])
	if err != nil {
		return e, fmt.Errorf("extent item: %w", atOffset(err, p))
	}
	return e, nil
}

// DecodeMetadataItem parses a METADATA_ITEM.
func DecodeMetadataItem(b []byte) (MetadataItem, error) {
	var m MetadataItem
	var err error
	m.Refs, m.Generation, m.Flags, err = decodeExtentHead(b, "metadata item")
	if err != nil {
		return m, err
	}
	m.Inline, err = DecodeInlineRefs(b[ExtentItemSize:])
	if err != nil {
		return m, fmt.Errorf("metadata item: %w", atOffset(err, ExtentItemSize))
	}
	return m, nil
}

func (e *ExtentItem) hasTreeBlockInfo() bool { return e.Flags&ExtentFlagTreeBlock != 0 }

// Size is the encoded size of the item.
func (e *ExtentItem) Size() int {
	n := ExtentItemSize + inlineRefsSize(e.Inline)
	if e.hasTreeBlockInfo() {
		n += TreeBlockInfoSize
	}
	return n
}

// Encode writes the item into b (at least e.Size() bytes).
func (e *ExtentItem) Encode(b []byte) {
	encodeExtentHead(b, e.Refs, e.Generation, e.Flags)
	p := ExtentItemSize
	if e.hasTreeBlockInfo() {
		e.TreeBlock.Key.Encode(b[p:])
		b[p+ondisk.KeySize] = e.TreeBlock.Level
		p += TreeBlockInfoSize
	}
	encodeInlineRefs(b[p:], e.Inline)
}

// Bytes encodes to a new slice.
func (e *ExtentItem) Bytes() []byte {
	b := make([]byte, e.Size())
	e.Encode(b)
	return b
}

// Size is the encoded size of the item.
func (m *MetadataItem) Size() int { return ExtentItemSize + inlineRefsSize(m.Inline) }

// Encode writes the item into b (at least m.Size() bytes).
func (m *MetadataItem) Encode(b []byte) {
	encodeExtentHead(b, m.Refs, m.Generation, m.Flags)
	encodeInlineRefs(b[ExtentItemSize:], m.Inline)
}

// Bytes encodes to a new slice.
func (m *MetadataItem) Bytes() []byte {
	b := make([]byte, m.Size())
	m.Encode(b)
	return b
}
