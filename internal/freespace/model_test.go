package freespace

import (
	"encoding/binary"
	"math/bits"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// model is the reference: one bit per sector of a block group (set = free),
// plus the layout the kernel's state machine would be in.
type model struct {
	bg        BlockGroup
	sector    uint64
	n         uint64 // sectors
	words     []uint64
	bitmaps   bool
	high, low uint32
}

func newModel(bg BlockGroup, sector uint32) *model {
	n := bg.Length / uint64(sector)
	m := &model{bg: bg, sector: uint64(sector), n: n, words: make([]uint64, (n+63)/64)}
	m.high, m.low = Thresholds(bg.Length, sector)
	return m
}

func (m *model) get(i uint64) bool { return m.words[i/64]&(1<<(i%64)) != 0 }

func (m *model) set(first, n uint64, v bool) {
	for i := first; i < first+n; i++ {
		if v {
			m.words[i/64] |= 1 << (i % 64)
		} else {
			m.words[i/64] &^= 1 << (i % 64)
		}
	}
}

// next returns the first sector >= from whose bit is v, or m.n.
func (m *model) next(from uint64, v bool) uint64 {
	for i := from; i < m.n; {
		w := m.words[i/64]
		if !v {
			w = ^w
		}
		w >>= i % 64
		if w != 0 {
			return min(i+uint64(bits.TrailingZeros64(w)), m.n)
		}
		i = (i/64 + 1) * 64
	}
	return m.n
}

// prev returns the last sector <= from whose bit is v, or -1.
func (m *model) prev(from uint64, v bool) int64 {
	for i := int64(from); i >= 0; i-- {
		if m.get(uint64(i)) == v {
			return i
		}
	}
	return -1
}

// extents returns the free runs.
func (m *model) extents() []Extent {
	var out []Extent
	for i := m.next(0, true); i < m.n; {
		j := m.next(i, false)
		out = append(out, Extent{m.addr(i), (j - i) * m.sector})
		i = m.next(j, true)
	}
	return out
}

func (m *model) addr(i uint64) ondisk.LogicalAddr {
	return m.bg.Start + ondisk.LogicalAddr(i*m.sector)
}

// step follows the kernel's layout state machine after an operation that
// took the extent count from before to after.
func (m *model) step(before, after int) {
	if before == after {
		return
	}
	if !m.bitmaps && after > int(m.high) {
		m.bitmaps = true
	} else if m.bitmaps && after < int(m.low) {
		m.bitmaps = false
	}
}

// records returns the records the kernel would hold for the model's free
// space in the model's layout, computed directly from the bits.
func (m *model) records() []Item {
	ext := m.extents()
	info := Info{ExtentCount: uint32(len(ext))}
	if m.bitmaps {
		info.Flags = FlagUsingBitmaps
	}
	items := []Item{{InfoKey(m.bg), info.Encode()}}
	if !m.bitmaps {
		for _, x := range ext {
			items = append(items, Item{ExtentKey(uint64(x.Start), x.Length), nil})
		}
		return items
	}
	raw := make([]byte, len(m.words)*8)
	for i, w := range m.words {
		binary.LittleEndian.PutUint64(raw[i*8:], w)
	}
	for first := uint64(0); first < m.n; first += BitmapBits {
		nb := min(uint64(BitmapBits), m.n-first)
		data := append([]byte(nil), raw[first/8:first/8+(nb+7)/8]...)
		items = append(items, Item{BitmapKey(uint64(m.addr(first)), nb*m.sector), data})
	}
	return items
}
