package freespace

import (
	"fmt"
	"io/fs"
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// memEditor is an Editor over a sorted slice: the tests' B-tree. It keeps the
// on-disk size of its items (item header, key included, plus data) and the
// peak of that size since the last resetPeak.
type memEditor struct {
	items []Item
	size  int
	peak  int
	// arena, when set, holds inserted data so that Insert does not allocate
	// (for measuring what a conversion itself allocates).
	arena []byte
	ops   int
}

func (m *memEditor) find(k ondisk.Key) (int, bool) {
	return slices.BinarySearchFunc(m.items, k, func(it Item, k ondisk.Key) int { return it.Key.Compare(k) })
}

func (m *memEditor) Range(min, max ondisk.Key, fn func(ondisk.Key, []byte) bool) error {
	i, _ := m.find(min)
	n := len(m.items)
	for ; i < n && m.items[i].Key.Compare(max) <= 0; i++ {
		if !fn(m.items[i].Key, m.items[i].Data) {
			break
		}
		if len(m.items) != n {
			panic("memEditor: tree modified during Range")
		}
	}
	return nil
}

func (m *memEditor) copyData(data []byte) []byte {
	if m.arena != nil && len(data) <= len(m.arena) {
		d := m.arena[:len(data):len(data)]
		m.arena = m.arena[len(data):]
		copy(d, data)
		return d
	}
	return append([]byte(nil), data...)
}

func (m *memEditor) Insert(k ondisk.Key, data []byte) error {
	m.ops++
	i, found := m.find(k)
	if found {
		return fmt.Errorf("insert %v: item exists", k)
	}
	m.items = slices.Insert(m.items, i, Item{k, m.copyData(data)})
	m.grow(ItemSize(len(data)))
	return nil
}

func (m *memEditor) Delete(k ondisk.Key) error {
	m.ops++
	i, found := m.find(k)
	if !found {
		return fmt.Errorf("delete %v: %w", k, fs.ErrNotExist)
	}
	m.grow(-ItemSize(len(m.items[i].Data)))
	m.items = slices.Delete(m.items, i, i+1)
	return nil
}

func (m *memEditor) Update(k ondisk.Key, data []byte) error {
	m.ops++
	i, found := m.find(k)
	if !found {
		return fmt.Errorf("update %v: %w", k, fs.ErrNotExist)
	}
	if len(data) != len(m.items[i].Data) {
		return fmt.Errorf("update %v: size %d, item has %d", k, len(data), len(m.items[i].Data))
	}
	copy(m.items[i].Data, data)
	return nil
}

func (m *memEditor) grow(n int) {
	m.size += n
	m.peak = max(m.peak, m.size)
}

func (m *memEditor) resetPeak() { m.peak = m.size }

// insertAll puts items (from Build) into the tree.
func (m *memEditor) insertAll(items []Item) error {
	for _, it := range items {
		if err := m.Insert(it.Key, it.Data); err != nil {
			return err
		}
	}
	return nil
}

// clone is a deep copy (to check that a failed operation changed nothing).
func (m *memEditor) clone() *memEditor {
	c := &memEditor{size: m.size, peak: m.peak}
	for _, it := range m.items {
		c.items = append(c.items, Item{it.Key, append([]byte(nil), it.Data...)})
	}
	return c
}

func (m *memEditor) equal(o *memEditor) bool {
	return slices.EqualFunc(m.items, o.items, func(a, b Item) bool {
		return a.Key == b.Key && string(a.Data) == string(b.Data)
	})
}

var _ Editor = (*memEditor)(nil)
