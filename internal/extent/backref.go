package extent

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// findExtent returns the extent item of bytenr (EXTENT_ITEM or METADATA_ITEM).
func findExtent(t *ctree.Tree, bytenr ondisk.LogicalAddr) (*extentRec, error) {
	min := ondisk.Key{ObjectID: ondisk.ObjectID(bytenr), Type: ondisk.ExtentItemKey}
	max := ondisk.Key{ObjectID: ondisk.ObjectID(bytenr), Type: ondisk.MetadataItemKey, Offset: ^uint64(0)}
	var rec *extentRec
	var derr error
	err := t.Range(min, max, func(k ondisk.Key, data []byte) bool {
		rec, derr = decodeExtentRec(k, data)
		return false
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("no extent item: %w", fs.ErrNotExist)
	}
	return rec, nil
}

func writeExtent(t *ctree.Tree, a ctree.Allocator, r *extentRec) error {
	return t.UpdateItem(a, r.key, r.bytes())
}

// insertExtent inserts the extent item of a newly allocated extent with its
// first reference. mirrors alloc_reserved_tree_block / alloc_reserved_file_extent
func (m *Manager) insertExtent(tr Trees, h *delayedref.Head, ref delayedref.Ref, count int, transid ondisk.Generation) error {
	t, err := tr.Tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		return err
	}
	r := &extentRec{refs: uint64(count), gen: transid}
	if h.IsData {
		r.key = ondisk.Key{ObjectID: ondisk.ObjectID(h.Bytenr), Type: ondisk.ExtentItemKey, Offset: h.NumBytes}
		r.flags = item.ExtentFlagData
	} else {
		if count != 1 {
			return corrupt("new tree block %d with %d references %v", uint64(h.Bytenr), count, ref)
		}
		r.flags = item.ExtentFlagTreeBlock | h.SetFlags
		if m.Skinny {
			r.key = ondisk.Key{ObjectID: ondisk.ObjectID(h.Bytenr), Type: ondisk.MetadataItemKey, Offset: uint64(h.Level)}
		} else {
			r.key = ondisk.Key{ObjectID: ondisk.ObjectID(h.Bytenr), Type: ondisk.ExtentItemKey, Offset: uint64(m.NodeSize)}
			r.info.Level = uint8(h.Level)
			if m.FirstKey != nil {
				r.info.Key, _ = m.FirstKey(h.Bytenr)
			}
		}
	}
	r.inline = []item.InlineRef{refToInline(ref, uint32(count))}
	if err := t.InsertItem(tr.Alloc(), r.key, r.bytes()); err != nil {
		return err
	}
	if err := m.freeSpaceRemove(tr, h.Bytenr, h.NumBytes); err != nil {
		return err
	}
	return m.Groups.Inserted(h.Bytenr, h.NumBytes)
}

// hasKeyedRefs reports whether any keyed back reference item of bytenr exists.
func hasKeyedRefs(t *ctree.Tree, bytenr ondisk.LogicalAddr) (bool, error) {
	found := false
	min := ondisk.Key{ObjectID: ondisk.ObjectID(bytenr), Type: ondisk.TreeBlockRefKey}
	max := ondisk.Key{ObjectID: ondisk.ObjectID(bytenr), Type: ondisk.SharedDataRefKey, Offset: ^uint64(0)}
	err := t.Range(min, max, func(ondisk.Key, []byte) bool { found = true; return false })
	return found, err
}

// addRef adds count references ref to an existing extent: inline when the
// item has room and no keyed refs exist, else as a keyed item.
// mirrors __btrfs_inc_extent_ref / insert_inline_extent_backref
func (m *Manager) addRef(tr Trees, h *delayedref.Head, ref delayedref.Ref, count int) error {
	t, err := tr.Tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		return err
	}
	a := tr.Alloc()
	r, err := findExtent(t, h.Bytenr)
	if err != nil {
		return corrupt("add %v: %w", ref, err)
	}
	i, found := findInline(r.inline, ref)
	if found {
		if !ref.IsData() {
			return corrupt("add %v: tree block reference already present", ref)
		}
		bumpInline(&r.inline[i], count)
		r.refs += uint64(count)
		return writeExtent(t, a, r)
	}
	keyed, err := hasKeyedRefs(t, h.Bytenr)
	if err != nil {
		return err
	}
	if !keyed && r.size()+item.InlineRefSize(ref.Type) < m.maxExtentItemSize() {
		ir := refToInline(ref, uint32(count))
		r.inline = append(r.inline, item.InlineRef{})
		copy(r.inline[i+1:], r.inline[i:])
		r.inline[i] = ir
		r.refs += uint64(count)
		return writeExtent(t, a, r)
	}
	r.refs += uint64(count)
	if err := writeExtent(t, a, r); err != nil {
		return err
	}
	return insertKeyed(t, a, h.Bytenr, ref, count)
}

func bumpInline(ir *item.InlineRef, count int) {
	if ir.Type == ondisk.ExtentDataRefKey {
		ir.DataRef.Count = uint32(int(ir.DataRef.Count) + count)
	} else {
		ir.Count = uint32(int(ir.Count) + count)
	}
}

// keyedKey is the key of a keyed back reference (for EXTENT_DATA_REF, the
// first candidate: collisions take the next offsets).
func keyedKey(bytenr ondisk.LogicalAddr, ref delayedref.Ref) ondisk.Key {
	k := ondisk.Key{ObjectID: ondisk.ObjectID(bytenr), Type: ref.Type}
	switch ref.Type {
	case ondisk.TreeBlockRefKey:
		k.Offset = uint64(ref.Root)
	case ondisk.ExtentDataRefKey:
		k.Offset = item.ExtentDataRefHash(uint64(ref.Root), uint64(ref.Owner), ref.Offset)
	default:
		k.Offset = uint64(ref.Parent)
	}
	return k
}

// insertKeyed adds count to a keyed back reference, creating it if needed.
// mirrors insert_tree_block_ref / insert_extent_data_ref
func insertKeyed(t *ctree.Tree, a ctree.Allocator, bytenr ondisk.LogicalAddr, ref delayedref.Ref, count int) error {
	k := keyedKey(bytenr, ref)
	switch ref.Type {
	case ondisk.TreeBlockRefKey, ondisk.SharedBlockRefKey:
		if err := t.InsertItem(a, k, nil); err != nil {
			return corrupt("add keyed %v of %d: %w", ref, uint64(bytenr), err)
		}
		return nil
	case ondisk.SharedDataRefKey:
		data, ok, err := t.Lookup(k)
		if err != nil {
			return err
		}
		sr := item.SharedDataRef{Count: uint32(count)}
		if ok {
			old, err := item.DecodeSharedDataRef(data)
			if err != nil {
				return corrupt("keyed ref %v: %w", k, err)
			}
			sr.Count += old.Count
			return t.UpdateItem(a, k, sr.Bytes())
		}
		return t.InsertItem(a, k, sr.Bytes())
	}
	for {
		data, ok, err := t.Lookup(k)
		if err != nil {
			return err
		}
		if !ok {
			dr := item.ExtentDataRef{Root: ref.Root, ObjectID: ref.Owner, Offset: ref.Offset, Count: uint32(count)}
			return t.InsertItem(a, k, dr.Bytes())
		}
		dr, err := item.DecodeExtentDataRef(data)
		if err != nil {
			return corrupt("keyed ref %v: %w", k, err)
		}
		if dr.Root == ref.Root && dr.ObjectID == ref.Owner && dr.Offset == ref.Offset {
			dr.Count += uint32(count)
			return t.UpdateItem(a, k, dr.Bytes())
		}
		k.Offset++ // hash collision
	}
}

// dropKeyed takes count from a keyed back reference, deleting it at zero.
// mirrors remove_extent_data_ref / lookup_tree_block_ref + btrfs_del_item
func dropKeyed(t *ctree.Tree, a ctree.Allocator, bytenr ondisk.LogicalAddr, ref delayedref.Ref, count int) error {
	k := keyedKey(bytenr, ref)
	for {
		data, ok, err := t.Lookup(k)
		if err != nil {
			return err
		}
		if !ok {
			return corrupt("drop %v of extent %d: no such back reference", ref, uint64(bytenr))
		}
		switch ref.Type {
		case ondisk.TreeBlockRefKey, ondisk.SharedBlockRefKey:
			if count != 1 {
				return corrupt("drop %v of extent %d: count %d", ref, uint64(bytenr), count)
			}
			return t.DeleteItem(a, k)
		case ondisk.SharedDataRefKey:
			sr, err := item.DecodeSharedDataRef(data)
			if err != nil {
				return corrupt("drop %v of extent %d: %w", ref, uint64(bytenr), err)
			}
			if int(sr.Count) < count {
				return corrupt("drop %v of extent %d: has count %d", ref, uint64(bytenr), sr.Count)
			}
			if int(sr.Count) == count {
				return t.DeleteItem(a, k)
			}
			sr.Count -= uint32(count)
			return t.UpdateItem(a, k, sr.Bytes())
		}
		dr, err := item.DecodeExtentDataRef(data)
		if err != nil {
			return corrupt("keyed ref %v: %w", k, err)
		}
		if dr.Root == ref.Root && dr.ObjectID == ref.Owner && dr.Offset == ref.Offset {
			if int(dr.Count) < count {
				return corrupt("drop %v of extent %d: has count %d", ref, uint64(bytenr), dr.Count)
			}
			if int(dr.Count) == count {
				return t.DeleteItem(a, k)
			}
			dr.Count -= uint32(count)
			return t.UpdateItem(a, k, dr.Bytes())
		}
		k.Offset++
	}
}

// dropRef removes count references ref from an extent; when none is left
// the extent item goes and the extent is freed. It reports whether it freed
// the extent. mirrors __btrfs_free_extent
func (m *Manager) dropRef(tr Trees, h *delayedref.Head, ref delayedref.Ref, count int) (bool, error) {
	t, err := tr.Tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		return false, err
	}
	a := tr.Alloc()
	r, err := findExtent(t, h.Bytenr)
	if err != nil {
		return false, corrupt("drop %v: %w", ref, err)
	}
	if r.refs < uint64(count) {
		return false, corrupt("drop %d of %v: extent has %d references", count, ref, r.refs)
	}
	i, found := findInline(r.inline, ref)
	if found {
		c := inlineCount(&r.inline[i])
		switch {
		case c < uint64(count):
			return false, corrupt("drop %d of %v: inline ref has %d", count, ref, c)
		case c == uint64(count):
			r.inline = append(r.inline[:i], r.inline[i+1:]...)
		default:
			bumpInline(&r.inline[i], -count)
		}
	} else if err := dropKeyed(t, a, h.Bytenr, ref, count); err != nil {
		return false, err
	}
	r.refs -= uint64(count)
	if r.refs > 0 {
		return false, writeExtent(t, a, r)
	}
	if len(r.inline) > 0 {
		return false, corrupt("extent %d: count reached 0 with %d inline refs left", uint64(h.Bytenr), len(r.inline))
	}
	if err := t.DeleteItem(a, r.key); err != nil {
		return false, err
	}
	return true, m.extentFreed(tr, h.Bytenr, h.NumBytes, h.IsData)
}

// extentFreed returns a dead extent's space: its checksums go, the free
// space tree gets it back, and it stays pinned until commit.
func (m *Manager) extentFreed(tr Trees, bytenr ondisk.LogicalAddr, n uint64, isData bool) error {
	if isData {
		if err := m.DelCsums(tr, bytenr, n); err != nil {
			return err
		}
	}
	if err := m.freeSpaceAdd(tr, bytenr, n); err != nil {
		return err
	}
	if err := m.Groups.Freed(bytenr, n); err != nil {
		return err
	}
	if m.Freed != nil {
		m.Freed(bytenr, n, isData)
	}
	return nil
}

// setFlags ORs flags into an existing extent item. mirrors run_delayed_extent_op
func (m *Manager) setFlags(tr Trees, h *delayedref.Head) error {
	t, err := tr.Tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		return err
	}
	r, err := findExtent(t, h.Bytenr)
	if err != nil {
		return corrupt("set flags %#x: %w", h.SetFlags, err)
	}
	if r.flags|h.SetFlags == r.flags {
		return nil
	}
	r.flags |= h.SetFlags
	return writeExtent(t, tr.Alloc(), r)
}

// LookupInfo returns the reference count and flags of the extent at bytenr,
// counting the changes queued in this transaction. mirrors btrfs_lookup_extent_info
func (m *Manager) LookupInfo(tr Trees, bytenr ondisk.LogicalAddr) (refs uint64, flags uint64, err error) {
	t, err := tr.Tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		return 0, 0, err
	}
	r, err := findExtent(t, bytenr)
	switch {
	case err == nil:
		refs, flags = r.refs, r.flags
	case !errors.Is(err, fs.ErrNotExist):
		return 0, 0, err
	}
	if h := m.Refs.Lookup(bytenr); h != nil {
		n := int64(refs) + int64(h.RefMod())
		if n < 0 {
			return 0, 0, corrupt("extent %d: %d references with %d queued", uint64(bytenr), refs, h.RefMod())
		}
		refs = uint64(n)
		flags |= h.SetFlags
	}
	return refs, flags, nil
}

func (m *Manager) freeSpaceEditor(tr Trees) (*freeSpaceOps, error) {
	if !m.FreeSpaceTree {
		return nil, nil
	}
	t, err := tr.Tree(ondisk.FreeSpaceTreeObjectID)
	if err != nil {
		return nil, err
	}
	return &freeSpaceOps{m: m, t: t, a: tr.Alloc()}, nil
}

func (m *Manager) freeSpaceRemove(tr Trees, a ondisk.LogicalAddr, n uint64) error {
	f, err := m.freeSpaceEditor(tr)
	if err != nil || f == nil {
		return err
	}
	return f.remove(a, n)
}

func (m *Manager) freeSpaceAdd(tr Trees, a ondisk.LogicalAddr, n uint64) error {
	f, err := m.freeSpaceEditor(tr)
	if err != nil || f == nil {
		return err
	}
	return f.add(a, n)
}
