package freespace

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

var (
	seedFlag = flag.Uint64("seed", 0, "seed for the random free space tests (0: from the clock)")
	opsFlag  = flag.Int("ops", 0, "least operations per block group in the random test (0: default)")
)

func testSeed(t testing.TB) uint64 {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return seed
}

// groupConfigs are the block groups the random test runs on.
var groupConfigs = []struct {
	name   string
	bg     BlockGroup
	sector uint32
}{
	{"1GiB-4K", BlockGroup{1 << 30, 1 << 30}, 4096},
	{"256MiB-4K", BlockGroup{30408704, 256 << 20}, 4096},
	{"odd-100MiB+12K-4K", BlockGroup{13631488, 100<<20 + 12<<10}, 4096},
	{"16MiB-4K", BlockGroup{5242880, 16 << 20}, 4096},
	{"2GiB+48K-16K", BlockGroup{1 << 34, 2<<30 + 48<<10}, 16384},
	{"1GiB-64K", BlockGroup{1 << 30, 1 << 30}, 65536},
	{"odd-300MiB+320K-64K", BlockGroup{3 << 30, 300<<20 + 5*65536}, 65536},
}

// TestRandomAgainstModel runs seeded random sequences of RemoveFree/AddFree
// on several block groups, driving the extent count back and forth across
// both thresholds, and after every operation checks the records against a
// model bitmap and the kernel's layout state machine.
func TestRandomAgainstModel(t *testing.T) {
	seed := testSeed(t)
	for ci, c := range groupConfigs {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, uint64(ci)))
			runRandom(t, r, c.bg, c.sector)
		})
	}
}

func runRandom(t *testing.T, r *rand.Rand, bg BlockGroup, sector uint32) {
	// At least minOps operations, and on until the layout has gone to bitmaps
	// and back `cycles` times (once to bitmaps where low is 0: it never comes
	// back), within maxOps.
	minOps, cycles, maxOps := 6000, 2, 60000
	if testing.Short() {
		minOps, cycles = 500, 1
	}
	if *opsFlag > 0 {
		minOps = *opsFlag
	}
	ed := &memEditor{}
	m := newModel(bg, sector)
	if err := AddBlockGroup(ed, bg, sector); err != nil {
		t.Fatal(err)
	}
	m.set(0, m.n, true)
	m.step(0, 1)
	checkGroup(t, ed, m, "after AddBlockGroup")

	st := struct{ toBitmaps, toExtents, maxExcess, maxRest int }{}
	fragment := true
	ops := 0
	for ; ops < maxOps; ops++ {
		if ops >= minOps && (m.low == 0 && st.toBitmaps > 0 || st.toBitmaps >= cycles && st.toExtents >= cycles) {
			break
		}
		op := ops
		count := len(m.extents())
		if fragment && count > int(m.high)+30 {
			fragment = false
		} else if !fragment && (count < int(m.low)-30 || count < 5) {
			fragment = true
		}
		remove := r.IntN(10) < 3
		if fragment {
			remove = r.IntN(10) < 7
		}
		first, n, ok := pickRange(r, m, remove, fragment)
		if !ok {
			continue
		}
		desc := fmt.Sprintf("op %d: remove=%v sectors %d+%d (count %d, bitmaps %v)", op, remove, first, n, count, m.bitmaps)
		ed.resetPeak()
		before := ed.size
		var err error
		if remove {
			err = RemoveFree(ed, bg, m.addr(first), n*m.sector, sector)
		} else {
			err = AddFree(ed, bg, m.addr(first), n*m.sector, sector)
		}
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		m.set(first, n, !remove)
		wasBitmaps := m.bitmaps
		m.step(count, len(m.extents()))
		checkGroup(t, ed, m, desc)

		// How far did the tree grow above what the kernel's conversion peaks at?
		kernelPeak := max(before, ed.size)
		switch {
		case m.bitmaps && !wasBitmaps:
			st.toBitmaps++
			kernelPeak = before + itemCost
		case !m.bitmaps && wasBitmaps:
			st.toExtents++
			kernelPeak = before
		}
		st.maxExcess = max(st.maxExcess, ed.peak-kernelPeak)
		st.maxRest = max(st.maxRest, ed.size)
	}
	t.Logf("%d ops: %d conversions to bitmaps, %d to extents; high %d low %d; largest at rest %d bytes (bound %d); "+
		"largest growth above the kernel's peak during an operation: %d bytes",
		ops, st.toBitmaps, st.toExtents, m.high, m.low, st.maxRest, restBound(m), st.maxExcess)
	if st.toBitmaps == 0 {
		t.Errorf("never converted to bitmaps")
	}
	if m.low > 0 && st.toExtents == 0 {
		t.Errorf("never converted back to extents")
	}
	if st.maxExcess >= itemCost { // see TestConversionGrowth
		t.Errorf("a conversion grew the tree %d bytes above the kernel's peak", st.maxExcess)
	}
}

// restBound is the most a group's records take between operations: extents
// never outnumber high, and high*25 <= the bitmaps' size.
func restBound(m *model) int {
	windows := (m.n + BitmapBits - 1) / BitmapBits
	return ItemSize(InfoSize) + int(windows)*ItemSize(BitmapSize)
}

// pickRange chooses a free (remove) or used (add) range: mostly a few
// sectors when fragmenting, often a whole run when coalescing, sometimes
// several bitmaps long.
func pickRange(r *rand.Rand, m *model, remove, fragment bool) (uint64, uint64, bool) {
	want := remove // removing takes free sectors
	s := r.Uint64N(m.n)
	if m.get(s) != want {
		s = m.next(s, want)
		if s == m.n {
			s = m.next(0, want)
			if s == m.n {
				return 0, 0, false
			}
		}
	}
	lo := uint64(m.prev(s, !want) + 1)
	hi := m.next(s, !want)
	runLen := hi - lo
	var n uint64
	switch k := r.IntN(20); {
	case !fragment && k < 8, k == 0:
		return lo, runLen, true // the whole run: merges on both sides
	case k < 3:
		n = 1 + r.Uint64N(min(runLen, 3*BitmapBits))
	default:
		n = 1 + r.Uint64N(min(runLen, 4))
	}
	first := lo + r.Uint64N(runLen-n+1)
	return first, n, true
}

// checkGroup checks the group's records after an operation: the exact records
// the kernel would hold (extent_count, layout, every extent or bitmap), no
// stray records, Load equal to the model, and the size bound.
func checkGroup(t *testing.T, ed *memEditor, m *model, desc string) {
	t.Helper()
	want := m.records()
	var got []Item
	_, max := (&geom{start: uint64(m.bg.Start), end: uint64(m.bg.Start) + m.bg.Length}).groupKeys()
	ed.Range(InfoKey(m.bg), max, func(k ondisk.Key, d []byte) bool {
		got = append(got, Item{k, d})
		return true
	})
	if len(got) != len(ed.items) {
		t.Fatalf("%s: %d records outside the group's range", desc, len(ed.items)-len(got))
	}
	if err := sameItems(got, want); err != nil {
		t.Fatalf("%s: records differ from the kernel's: %v", desc, err)
	}
	ext, err := Load(ed, m.bg, uint32(m.sector))
	if err != nil {
		t.Fatalf("%s: load: %v", desc, err)
	}
	if err := sameExtents(ext, m.extents()); err != nil {
		t.Fatalf("%s: load: %v", desc, err)
	}
	if ed.size > restBound(m) {
		t.Fatalf("%s: records take %d bytes, more than %d", desc, ed.size, restBound(m))
	}
}

func sameItems(got, want []Item) error {
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(got):
			return fmt.Errorf("missing %v (and %d more)", want[i].Key, len(want)-i-1)
		case i >= len(want):
			return fmt.Errorf("extra %v (and %d more)", got[i].Key, len(got)-i-1)
		case got[i].Key != want[i].Key:
			return fmt.Errorf("item %d is %v, want %v", i, got[i].Key, want[i].Key)
		case string(got[i].Data) != string(want[i].Data):
			return fmt.Errorf("item %d %v: data %x, want %x", i, got[i].Key, got[i].Data, want[i].Data)
		}
	}
	return nil
}

func sameExtents(got, want []Extent) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d free extents, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("free extent %d is %d+%d, want %d+%d", i,
				uint64(got[i].Start), got[i].Length, uint64(want[i].Start), want[i].Length)
		}
	}
	return nil
}
