// Package delayedref queues reference count changes of extents during a
// transaction and merges them, so that the extent tree is modified once per
// extent, at commit, in bytenr order (the kernel's delayed-ref.c).
//
// Every change is a (bytenr, back reference, ±count). Changes to the same
// back reference of the same extent cancel or add up; a head per extent
// keeps the merged set, whether the extent was allocated in this
// transaction (its extent item must be inserted), and extent flags to set.
package delayedref

import (
	"fmt"
	"sort"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Ref names one back reference of an extent, as stored in the extent tree:
//
//	TREE_BLOCK_REF   Root          a tree block referenced by tree Root
//	SHARED_BLOCK_REF Parent        a tree block referenced by block Parent
//	EXTENT_DATA_REF  Root/Owner/Offset  data referenced by inode Owner of tree Root at file offset Offset
//	SHARED_DATA_REF  Parent        data referenced by a file extent item in leaf Parent
//
// Fields a type does not use are zero, so Refs compare equal exactly when
// they name the same back reference.
type Ref struct {
	Type   ondisk.ItemType
	Root   ondisk.ObjectID
	Parent ondisk.LogicalAddr
	Owner  ondisk.ObjectID
	Offset uint64
}

// TreeRef is the back reference from a tree block's parent: shared (by
// address of the parent) when parent != 0, else by tree root.
func TreeRef(root ondisk.ObjectID, parent ondisk.LogicalAddr) Ref {
	if parent != 0 {
		return Ref{Type: ondisk.SharedBlockRefKey, Parent: parent}
	}
	return Ref{Type: ondisk.TreeBlockRefKey, Root: root}
}

// DataRef is the back reference from a file extent item: shared (by
// address of its leaf) when parent != 0, else by (root, inode, offset).
func DataRef(root, ino ondisk.ObjectID, offset uint64, parent ondisk.LogicalAddr) Ref {
	if parent != 0 {
		return Ref{Type: ondisk.SharedDataRefKey, Parent: parent}
	}
	return Ref{Type: ondisk.ExtentDataRefKey, Root: root, Owner: ino, Offset: offset}
}

// IsData reports whether the ref is one of a data extent.
func (r Ref) IsData() bool {
	return r.Type == ondisk.ExtentDataRefKey || r.Type == ondisk.SharedDataRefKey
}

func (r Ref) String() string {
	switch r.Type {
	case ondisk.TreeBlockRefKey:
		return fmt.Sprintf("tree block ref root %d", r.Root)
	case ondisk.SharedBlockRefKey:
		return fmt.Sprintf("shared block ref parent %d", r.Parent)
	case ondisk.ExtentDataRefKey:
		return fmt.Sprintf("extent data ref root %d ino %d offset %d", r.Root, r.Owner, r.Offset)
	case ondisk.SharedDataRefKey:
		return fmt.Sprintf("shared data ref parent %d", r.Parent)
	}
	return fmt.Sprintf("ref type %d", r.Type)
}

// less orders refs deterministically (type, then fields).
func (r Ref) less(o Ref) bool {
	switch {
	case r.Type != o.Type:
		return r.Type < o.Type
	case r.Root != o.Root:
		return r.Root < o.Root
	case r.Parent != o.Parent:
		return r.Parent < o.Parent
	case r.Owner != o.Owner:
		return r.Owner < o.Owner
	}
	return r.Offset < o.Offset
}

// Mod is a ref with its net count change.
type Mod struct {
	Ref   Ref
	Count int
}

// Head is the merged set of changes to one extent. mirrors struct btrfs_delayed_ref_head
type Head struct {
	Bytenr   ondisk.LogicalAddr
	NumBytes uint64
	IsData   bool
	// Level is the tree block's level (tree blocks only).
	Level int
	// MustInsert is set for an extent allocated in this transaction: it has
	// no extent item yet; the first added ref inserts it.
	MustInsert bool
	// SetFlags are extent flags to OR into the extent item (FULL_BACKREF).
	SetFlags uint64

	refs map[Ref]int
}

// RefMod is the net change of the extent's reference count.
func (h *Head) RefMod() int {
	n := 0
	for _, c := range h.refs {
		n += c
	}
	return n
}

// Count returns the net change queued for one ref.
func (h *Head) Count(r Ref) int { return h.refs[r] }

// Mods returns the non-zero changes: additions first, then drops (so that a
// count never passes through zero while another ref still holds the extent),
// each group in a fixed order. mirrors select_delayed_ref
func (h *Head) Mods() []Mod {
	var out []Mod
	for r, c := range h.refs {
		if c != 0 {
			out = append(out, Mod{r, c})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].Count > 0) != (out[j].Count > 0) {
			return out[i].Count > 0
		}
		return out[i].Ref.less(out[j].Ref)
	})
	return out
}

// Empty reports whether the head changes nothing.
func (h *Head) Empty() bool {
	if h.MustInsert || h.SetFlags != 0 {
		return false
	}
	for _, c := range h.refs {
		if c != 0 {
			return false
		}
	}
	return true
}

// Queue holds the heads of one transaction. Safe for concurrent use.
type Queue struct {
	mu    sync.Mutex
	heads map[ondisk.LogicalAddr]*Head
}

func (q *Queue) head(bytenr ondisk.LogicalAddr, numBytes uint64, isData bool, level int) (*Head, error) {
	if q.heads == nil {
		q.heads = make(map[ondisk.LogicalAddr]*Head)
	}
	h := q.heads[bytenr]
	if h == nil {
		h = &Head{Bytenr: bytenr, NumBytes: numBytes, IsData: isData, Level: level, refs: map[Ref]int{}}
		q.heads[bytenr] = h
		return h, nil
	}
	if h.NumBytes != numBytes || h.IsData != isData {
		return nil, fmt.Errorf("delayed ref for extent %d+%d (data %v) conflicts with queued %d+%d (data %v)",
			uint64(bytenr), numBytes, isData, uint64(bytenr), h.NumBytes, h.IsData)
	}
	return h, nil
}

// Add queues count (positive: add, negative: drop) references ref to the
// extent at bytenr. mirrors btrfs_add_delayed_tree_ref / btrfs_add_delayed_data_ref
func (q *Queue) Add(bytenr ondisk.LogicalAddr, numBytes uint64, level int, ref Ref, count int) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	h, err := q.head(bytenr, numBytes, ref.IsData(), level)
	if err != nil {
		return err
	}
	if !ref.IsData() {
		h.Level = level
	}
	h.refs[ref] += count
	if h.refs[ref] == 0 {
		delete(h.refs, ref)
	}
	return nil
}

// Allocated records that the extent at bytenr was allocated in this
// transaction with a first reference ref: the extent item is inserted when
// the queue runs (unless the references cancel out by then).
func (q *Queue) Allocated(bytenr ondisk.LogicalAddr, numBytes uint64, level int, ref Ref, count int) error {
	q.mu.Lock()
	h, err := q.head(bytenr, numBytes, ref.IsData(), level)
	if err == nil && !h.MustInsert && len(h.refs) > 0 {
		err = fmt.Errorf("extent %d allocated while references to it are queued", uint64(bytenr))
	}
	if err != nil {
		q.mu.Unlock()
		return err
	}
	h.MustInsert = true
	h.Level = level
	q.mu.Unlock()
	return q.Add(bytenr, numBytes, level, ref, count)
}

// SetFlags queues extent flags to set on the extent at bytenr.
// mirrors btrfs_add_delayed_extent_op
func (q *Queue) SetFlags(bytenr ondisk.LogicalAddr, numBytes uint64, level int, isData bool, flags uint64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	h, err := q.head(bytenr, numBytes, isData, level)
	if err != nil {
		return err
	}
	h.SetFlags |= flags
	return nil
}

// Lookup returns a copy of the head queued for bytenr, or nil.
func (q *Queue) Lookup(bytenr ondisk.LogicalAddr) *Head {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.heads[bytenr]
	if h == nil {
		return nil
	}
	c := *h
	c.refs = make(map[Ref]int, len(h.refs))
	for r, n := range h.refs {
		c.refs[r] = n
	}
	return &c
}

// Remove drops the head for bytenr and returns it (nil if none).
func (q *Queue) Remove(bytenr ondisk.LogicalAddr) *Head {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.heads[bytenr]
	delete(q.heads, bytenr)
	return h
}

// Len is the number of queued heads.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.heads)
}

// TakeAll removes every head and returns them in bytenr order.
func (q *Queue) TakeAll() []*Head {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]*Head, 0, len(q.heads))
	for _, h := range q.heads {
		out = append(out, h)
	}
	q.heads = nil
	sort.Slice(out, func(i, j int) bool { return out[i].Bytenr < out[j].Bytenr })
	return out
}

// Reset discards everything (transaction abort).
func (q *Queue) Reset() {
	q.mu.Lock()
	q.heads = nil
	q.mu.Unlock()
}

// SetLevel changes the level recorded for a tree block queued as new (for a
// block whose content was replaced by a copy of another level).
func (q *Queue) SetLevel(bytenr ondisk.LogicalAddr, level int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if h := q.heads[bytenr]; h != nil && !h.IsData {
		h.Level = level
	}
}

// Grow changes the size of a data extent allocated in this transaction
// from numBytes to newBytes, when its only reference is one queued with
// its allocation (one data ref, count 1): nothing else can know its size
// yet, and its extent item, inserted when the queue runs, gets the new
// one. It reports whether it did.
func (q *Queue) Grow(bytenr ondisk.LogicalAddr, numBytes, newBytes uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.heads[bytenr]
	if h == nil || !h.MustInsert || !h.IsData || h.NumBytes != numBytes || h.SetFlags != 0 || len(h.refs) != 1 {
		return false
	}
	for r, c := range h.refs {
		if c != 1 || !r.IsData() {
			return false
		}
	}
	h.NumBytes = newBytes
	return true
}
