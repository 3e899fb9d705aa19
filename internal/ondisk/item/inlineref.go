package item

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// InlineRef is struct btrfs_extent_inline_ref: one back reference stored in
// an extent item. Type is TREE_BLOCK_REF (Offset = root), SHARED_BLOCK_REF
// (Offset = parent block), EXTENT_DATA_REF (DataRef; no offset field on
// disk), SHARED_DATA_REF (Offset = parent block, Count) or EXTENT_OWNER_REF
// (Offset = owning root, simple quotas).
//
//	0 type u8 1 offset u64 | extent_data_ref(28)   [9 shared_data_ref count u32]
type InlineRef struct {
	Type    ondisk.ItemType
	Offset  uint64
	DataRef ExtentDataRef
	Count   uint32
}

// InlineRefSize returns the encoded size of an inline ref of type t, or 0
// for a type that cannot be inline. mirrors btrfs_extent_inline_ref_size
func InlineRefSize(t ondisk.ItemType) int {
	switch t {
	case ondisk.TreeBlockRefKey, ondisk.SharedBlockRefKey, ondisk.ExtentOwnerRefKey:
		return 9
	case ondisk.SharedDataRefKey:
		return 9 + SharedDataRefSize
	case ondisk.ExtentDataRefKey:
		return 1 + ExtentDataRefSize
	}
	return 0
}

// DecodeInlineRef parses the first inline ref of b and returns its size.
func DecodeInlineRef(b []byte) (InlineRef, int, error) {
	var r InlineRef
	if len(b) < 1 {
		return r, 0, short("inline ref", len(b), 1)
	}
	r.Type = ondisk.ItemType(b[0])
	n := InlineRefSize(r.Type)
	if n == 0 {
		return r, 0, fmt.Errorf("inline ref: unknown type %d", b[0])
	}
	if len(b) < n {
		return r, 0, short("inline ref "+r.Type.String(), len(b), n)
	}
	switch r.Type {
	case ondisk.ExtentDataRefKey:
		r.DataRef, _ = DecodeExtentDataRef(b[1:])
	case ondisk.SharedDataRefKey:
		r.Offset = le.Uint64(b[1:])
		r.Count = le.Uint32(b[9:])
	default:
		r.Offset = le.Uint64(b[1:])
	}
	return r, n, nil
}

// DecodeInlineRefs parses the inline refs that fill b.
func DecodeInlineRefs(b []byte) ([]InlineRef, error) {
	var out []InlineRef
	for p := 0; p < len(b); {
		r, n, err := DecodeInlineRef(b[p:])
		if err != nil {
			return nil, atOffset(err, p)
		}
		out = append(out, r)
		p += n
	}
	return out, nil
}

// Size is the encoded size (0 for an unknown type).
func (r *InlineRef) Size() int { return InlineRefSize(r.Type) }

// Encode writes the ref into b (at least r.Size() bytes).
func (r *InlineRef) Encode(b []byte) {
	b[0] = byte(r.Type)
	switch r.Type {
	case ondisk.ExtentDataRefKey:
		r.DataRef.Encode(b[1:])
	case ondisk.SharedDataRefKey:
		le.PutUint64(b[1:], r.Offset)
		le.PutUint32(b[9:], r.Count)
	default:
		le.PutUint64(b[1:], r.Offset)
	}
}

func inlineRefsSize(rs []InlineRef) int {
	n := 0
	for i := range rs {
		n += rs[i].Size()
	}
	return n
}

func encodeInlineRefs(b []byte, rs []InlineRef) {
	p := 0
	for i := range rs {
		rs[i].Encode(b[p:])
		p += rs[i].Size()
	}
}
