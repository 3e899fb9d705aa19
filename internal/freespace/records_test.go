package freespace

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

const mib = 1 << 20

func TestThresholds(t *testing.T) {
	for _, c := range []struct {
		length    uint64
		sector    uint32
		high, low uint32
	}{
		{1 << 30, 4096, 1438, 1338}, // 128 bitmaps * 281 / 25
		{256 * mib, 4096, 359, 259}, // 32 bitmaps
		{8 * mib, 4096, 11, 0},      // one bitmap: never back to extents
		{8*mib + 4096, 4096, 22, 0}, // a second, one-sector bitmap still counts as a whole one
		{1 << 30, 65536, 89, 0},     // 8 bitmaps of 128 MiB
		{10 << 30, 4096, 14387, 14287},
	} {
		high, low := Thresholds(c.length, c.sector)
		if high != c.high || low != c.low {
			t.Errorf("Thresholds(%d, %d) = %d, %d; want %d, %d", c.length, c.sector, high, low, c.high, c.low)
		}
	}
}

// items returns the whole tree, for comparisons.
func (m *memEditor) dump() []Item { return m.items }

func extentItems(bg BlockGroup, count uint32, ext ...[2]uint64) []Item {
	items := []Item{{InfoKey(bg), Info{ExtentCount: count}.Encode()}}
	for _, x := range ext {
		items = append(items, Item{ExtentKey(x[0], x[1]), nil})
	}
	return items
}

// TestExtentCases walks the kernel's four cases of add_free_space_extent and
// remove_free_space_extent on a small group.
func TestExtentCases(t *testing.T) {
	const s = 4096
	bg := BlockGroup{1 * mib, 1 * mib} // 256 sectors, one bitmap; high 11
	a := uint64(bg.Start)
	ed := &memEditor{}
	step := func(name string, err error, count uint32, ext ...[2]uint64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := sameItems(ed.dump(), extentItems(bg, count, ext...)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	step("add block group", AddBlockGroup(ed, bg, s), 1, [2]uint64{a, mib})
	step("remove the middle (case 4: two leftovers)", RemoveFree(ed, bg, bg.Start+8*s, 4*s, s), 2,
		[2]uint64{a, 8 * s}, [2]uint64{a + 12*s, mib - 12*s})
	step("remove a beginning (case 2)", RemoveFree(ed, bg, bg.Start, 2*s, s), 2,
		[2]uint64{a + 2*s, 6 * s}, [2]uint64{a + 12*s, mib - 12*s})
	step("remove an end (case 3)", RemoveFree(ed, bg, bg.Start+7*s, s, s), 2,
		[2]uint64{a + 2*s, 5 * s}, [2]uint64{a + 12*s, mib - 12*s})
	step("remove a whole extent (case 1)", RemoveFree(ed, bg, bg.Start+2*s, 5*s, s), 1,
		[2]uint64{a + 12*s, mib - 12*s})
	step("add alone (case 1)", AddFree(ed, bg, bg.Start+4*s, 2*s, s), 2,
		[2]uint64{a + 4*s, 2 * s}, [2]uint64{a + 12*s, mib - 12*s})
	step("add after a free neighbour (case 2)", AddFree(ed, bg, bg.Start+6*s, 1*s, s), 2,
		[2]uint64{a + 4*s, 3 * s}, [2]uint64{a + 12*s, mib - 12*s})
	step("add before a free neighbour (case 3)", AddFree(ed, bg, bg.Start+3*s, 1*s, s), 2,
		[2]uint64{a + 3*s, 4 * s}, [2]uint64{a + 12*s, mib - 12*s})
	step("add between two (case 4)", AddFree(ed, bg, bg.Start+7*s, 5*s, s), 1,
		[2]uint64{a + 3*s, mib - 3*s})
	step("add at the group's start", AddFree(ed, bg, bg.Start, 3*s, s), 1, [2]uint64{a, mib})
}

// TestBitmapLayout converts a small group to bitmaps and back through the
// kernel's thresholds (high 22, low 0 for two bitmaps: it never goes back),
// checking records at each step against the model.
func TestBitmapLayout(t *testing.T) {
	const s = 4096
	bg := BlockGroup{64 * mib, 8*mib + 3*s} // two bitmaps, the second of 3 sectors (1 byte)
	ed := &memEditor{}
	m := newModel(bg, s)
	if err := AddBlockGroup(ed, bg, s); err != nil {
		t.Fatal(err)
	}
	m.set(0, m.n, true)
	m.step(0, 1)
	for i := uint64(1); i < 60; i += 2 { // every other sector: a new extent each time
		count := len(m.extents())
		if err := RemoveFree(ed, bg, m.addr(i), s, s); err != nil {
			t.Fatal(err)
		}
		m.set(i, 1, false)
		m.step(count, len(m.extents()))
		checkGroup(t, ed, m, "fragmenting")
	}
	if !m.bitmaps {
		t.Fatal("never converted")
	}
	// Across the bitmap boundary, at the group's end, then back.
	for _, r := range []struct {
		remove   bool
		first, n uint64
	}{
		{true, BitmapBits - 1, 2}, // 2047-2048, across the two bitmaps
		{true, m.n - 1, 1},        // the group's last sector
		{true, 1990, 50},
		{false, BitmapBits - 1, 2}, // merges with free sectors on both sides
		{false, m.n - 1, 1},
		{false, 1990, 50},
	} {
		count := len(m.extents())
		var err error
		if r.remove {
			err = RemoveFree(ed, bg, m.addr(r.first), r.n*s, s)
		} else {
			err = AddFree(ed, bg, m.addr(r.first), r.n*s, s)
		}
		if err != nil {
			t.Fatal(err)
		}
		m.set(r.first, r.n, !r.remove)
		m.step(count, len(m.extents()))
		checkGroup(t, ed, m, "across bitmaps")
	}
}

// TestBuildMatchesPopulate: Build gives the records the kernel's
// populate_free_space_tree leaves (an empty info item, then each free range
// added in order), for random free lists on either side of the threshold.
func TestBuildMatchesPopulate(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed(t), 1))
	for _, c := range groupConfigs {
		m := newModel(c.bg, c.sector)
		for _, target := range []int{0, 1, int(m.high), int(m.high) + 1, int(m.high) * 2} {
			m := newModel(c.bg, c.sector)
			for len(m.extents()) < target {
				i := r.Uint64N(m.n)
				m.set(i, min(1+r.Uint64N(8), m.n-i), true)
			}
			free := m.extents()
			built, err := Build(c.bg, free, c.sector)
			if err != nil {
				t.Fatal(err)
			}
			ed := &memEditor{}
			ed.Insert(InfoKey(c.bg), Info{}.Encode())
			for _, x := range free {
				if err := AddFree(ed, c.bg, x.Start, x.Length, c.sector); err != nil {
					t.Fatal(err)
				}
			}
			if err := sameItems(built, ed.dump()); err != nil {
				t.Fatalf("%s, %d extents: Build differs from populating: %v", c.name, len(free), err)
			}
			if got, err := Load(ed, c.bg, c.sector); err != nil || sameExtents(got, free) != nil {
				t.Fatalf("%s: load after build: %v %v", c.name, err, sameExtents(got, free))
			}
		}
	}
	// Unsorted and adjacent input is merged; overlapping input is refused.
	bg := BlockGroup{mib, mib}
	items, err := Build(bg, []Extent{{bg.Start + 8192, 4096}, {bg.Start, 8192}}, 4096)
	if err != nil || sameItems(items, extentItems(bg, 1, [2]uint64{mib, 12288})) != nil {
		t.Fatalf("Build merged badly: %v %v", items, err)
	}
	if _, err := Build(bg, []Extent{{bg.Start, 8192}, {bg.Start + 4096, 8192}}, 4096); err == nil {
		t.Fatal("Build accepted overlapping extents")
	}
}

func isCorrupt(err error) bool { return errors.Is(err, diskio.ErrCorrupt) }

// TestRefusals: requests that contradict the records fail as corruption and
// change nothing; malformed requests fail plainly; a group without an info
// item fails as not found.
func TestRefusals(t *testing.T) {
	const s = 4096
	bg := BlockGroup{mib, 16 * mib}
	for _, bitmaps := range []bool{false, true} {
		m := newModel(bg, s)
		m.set(0, 1000, true)    // free: sectors 0..999
		m.set(2000, 1000, true) // free: 2000..2999, 4096 is the 2nd bitmap
		m.bitmaps = bitmaps
		ed := &memEditor{}
		ed.insertAll(m.records())
		for _, c := range []struct {
			name    string
			remove  bool
			first   uint64
			n       uint64
			corrupt bool
		}{
			{"remove used", true, 1500, 10, true},
			{"remove partly used", true, 990, 20, true},
			{"remove across a gap", true, 500, 2000, true},
			{"add free", false, 10, 10, true},
			{"add partly free", false, 1990, 20, true},
			{"add over a free extent", false, 1500, 2000, true},
		} {
			before := ed.clone()
			var err error
			if c.remove {
				err = RemoveFree(ed, bg, m.addr(c.first), c.n*s, s)
			} else {
				err = AddFree(ed, bg, m.addr(c.first), c.n*s, s)
			}
			if err == nil || isCorrupt(err) != c.corrupt {
				t.Errorf("bitmaps=%v %s: err %v", bitmaps, c.name, err)
			}
			if !ed.equal(before) {
				t.Errorf("bitmaps=%v %s: the failed operation changed the tree", bitmaps, c.name)
			}
		}
		for _, c := range []struct {
			name  string
			start ondisk.LogicalAddr
			n     uint64
			s     uint32
		}{
			{"unaligned start", bg.Start + 100, s, s},
			{"unaligned length", bg.Start, 100, s},
			{"zero length", bg.Start, 0, s},
			{"before the group", bg.Start - s, 2 * s, s},
			{"past the group", bg.Start + 16*mib - s, 2 * s, s},
			{"bad sector size", bg.Start, s, 3000},
		} {
			err := AddFree(ed, bg, c.start, c.n, c.s)
			if err == nil || isCorrupt(err) {
				t.Errorf("bitmaps=%v %s: err %v", bitmaps, c.name, err)
			}
		}
	}
	other := BlockGroup{64 * mib, mib}
	if err := AddFree(&memEditor{}, other, other.Start, 4096, 4096); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no info: %v", err)
	}
	if _, err := Load(&memEditor{}, other, 4096); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("load, no info: %v", err)
	}
	if err := RemoveBlockGroup(&memEditor{}, other); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("remove block group, no info: %v", err)
	}
}

// TestLoadRejectsCorruption: Load checks what btrfs check checks.
func TestLoadRejectsCorruption(t *testing.T) {
	const s = 4096
	bg := BlockGroup{mib, 16 * mib} // two bitmaps
	a := uint64(bg.Start)
	bm := func(w int, size int) Item {
		g, _ := newGeom(bg, s)
		return Item{g.bitmapKey(w), make([]byte, size)}
	}
	info := func(count, flags uint32) Item { return Item{InfoKey(bg), Info{count, flags}.Encode()} }
	for _, c := range []struct {
		name  string
		items []Item
	}{
		{"info too short", []Item{{InfoKey(bg), []byte{1, 0, 0, 0}}}},
		{"count too high", []Item{info(2, 0), {ExtentKey(a, s), nil}}},
		{"count too low", []Item{info(0, 0), {ExtentKey(a, s), nil}}},
		{"unmerged extents", []Item{info(2, 0), {ExtentKey(a, s), nil}, {ExtentKey(a+s, s), nil}}},
		{"overlapping extents", []Item{info(2, 0), {ExtentKey(a, 2*s), nil}, {ExtentKey(a+s, 2*s), nil}}},
		{"extent past the group", []Item{info(1, 0), {ExtentKey(a+16*mib-s, 2*s), nil}}},
		{"extent after the group", []Item{info(1, 0), {ExtentKey(a+17*mib, s), nil}}},
		{"bitmap in the extent layout", []Item{info(0, 0), bm(0, 256)}},
		{"extent in the bitmap layout", []Item{info(1, 1), {ExtentKey(a, s), nil}, bm(0, 256), bm(1, 256)}},
		{"missing bitmap", []Item{info(0, 1), bm(0, 256)}},
		{"short bitmap", []Item{info(0, 1), bm(0, 255), bm(1, 256)}},
		{"bitmap count", []Item{info(1, 1), bm(0, 256), bm(1, 256)}},
		{"misplaced bitmap", []Item{info(0, 1), {BitmapKey(a+s, 8*mib), make([]byte, 256)}, bm(1, 256)}},
	} {
		ed := &memEditor{}
		if err := ed.insertAll(c.items); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(ed, bg, s); !isCorrupt(err) {
			t.Errorf("%s: Load returned %v, want corruption", c.name, err)
		}
	}
}

// TestBlockGroups: adding and removing groups touches only their own
// records, in either layout.
func TestBlockGroups(t *testing.T) {
	const s = 4096
	bgs := []BlockGroup{{mib, 16 * mib}, {17 * mib, 16 * mib}, {33 * mib, 16 * mib}}
	ed := &memEditor{}
	for _, bg := range bgs {
		if err := AddBlockGroup(ed, bg, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := AddBlockGroup(ed, bgs[1], s); err == nil {
		t.Fatal("added a block group twice")
	}
	// Fragment the middle group into bitmaps.
	for i := ondisk.LogicalAddr(0); i < 64; i += 2 {
		if err := RemoveFree(ed, bgs[1], bgs[1].Start+i*s, s, s); err != nil {
			t.Fatal(err)
		}
	}
	if info, _ := ReadInfo(ed, bgs[1]); !info.UsingBitmaps() {
		t.Fatal("middle group not in bitmaps")
	}
	for _, bg := range []BlockGroup{bgs[1], bgs[0]} {
		if err := RemoveBlockGroup(ed, bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := sameItems(ed.dump(), extentItems(bgs[2], 1, [2]uint64{33 * mib, 16 * mib})); err != nil {
		t.Fatal(err)
	}
}

// TestWorstCase: a 1 GiB group with every other 4 KiB sector free, the
// seed's worst case: 131072 free extents held in 128 bitmaps of
// 25+256 bytes, ~35 KB (the seed's 1 GB / (256*8*4096) * 281), where extent
// records would take 3.2 MB. Built both by Build and by 131072 RemoveFree
// calls on a fresh group.
func TestWorstCase(t *testing.T) {
	const s = 4096
	bg := BlockGroup{1 << 30, 1 << 30}
	m := newModel(bg, s)
	for i := uint64(0); i < m.n; i += 2 {
		m.set(i, 1, true)
	}
	built, err := Build(bg, m.extents(), s)
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, it := range built {
		size += ItemSize(len(it.Data))
	}
	ed := &memEditor{}
	if err := AddBlockGroup(ed, bg, s); err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i < m.n; i += 2 {
		if err := RemoveFree(ed, bg, m.addr(i), s, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := sameItems(ed.dump(), built); err != nil {
		t.Fatalf("records from RemoveFree differ from Build's: %v", err)
	}
	seed := 128 * (25 + 256)
	t.Logf("every other sector free: %d extents, %d records, %d bytes (bitmaps %d + info %d); as extents: %d bytes",
		len(m.extents()), len(built), size, seed, ItemSize(InfoSize), ItemSize(InfoSize)+len(m.extents())*itemCost)
	if size != seed+ItemSize(InfoSize) || ed.size != size {
		t.Fatalf("records take %d bytes (tree %d), want the seed's %d + %d for the info item", size, ed.size, seed, ItemSize(InfoSize))
	}
}
