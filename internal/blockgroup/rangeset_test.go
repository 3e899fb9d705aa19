package blockgroup

import (
	"math/rand"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestRangeSetModel compares RangeSet with a bitmap under random operations.
func TestRangeSetModel(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	const size = 512
	var s RangeSet
	var model [size]bool
	for i := 0; i < 20000; i++ {
		start := uint64(r.Intn(size))
		n := uint64(r.Intn(size-int(start)) + 1)
		switch r.Intn(3) {
		case 0:
			s.Add(start, n)
			for j := start; j < start+n; j++ {
				model[j] = true
			}
		case 1:
			want := uint64(0)
			for j := start; j < start+n; j++ {
				if model[j] {
					want++
				}
				model[j] = false
			}
			if got := s.Remove(start, n); got != want {
				t.Fatalf("op %d: Remove(%d,%d) = %d, want %d", i, start, n, got, want)
			}
		case 2:
			all, any := true, false
			for j := start; j < start+n; j++ {
				all = all && model[j]
				any = any || model[j]
			}
			if s.Contains(start, n) != all || s.Overlaps(start, n) != any {
				t.Fatalf("op %d: Contains/Overlaps(%d,%d) = %v/%v, want %v/%v", i, start, n,
					s.Contains(start, n), s.Overlaps(start, n), all, any)
			}
		}
		// Ranges are sorted, disjoint, non-adjacent, and match the model.
		var total uint64
		var got [size]bool
		prev := Range{}
		for k, rg := range s.Ranges() {
			if rg.Start >= rg.End || k > 0 && rg.Start <= prev.End {
				t.Fatalf("op %d: bad ranges %v", i, s.Ranges())
			}
			for j := rg.Start; j < rg.End; j++ {
				got[j] = true
			}
			total += rg.Len()
			prev = rg
		}
		if got != model || total != s.Total() {
			t.Fatalf("op %d: set %v (total %d) differs from the model", i, s.Ranges(), s.Total())
		}
	}
}

func TestFindAlignment(t *testing.T) {
	var s RangeSet
	s.Add(4096, 200<<10)
	a, ok := s.Find(16384, 4096, StripeLen, 60<<10)
	if !ok || a != 64<<10 {
		t.Fatalf("Find crossing a stripe: %d %v", a, ok)
	}
	a, ok = s.Find(8192, 4096, 0, 300<<10) // wraps around
	if !ok || a != 4096 {
		t.Fatalf("Find wrapping: %d %v", a, ok)
	}
	if _, ok := s.Find(300<<10, 4096, 0, 0); ok {
		t.Fatal("Find of more than is free")
	}
}

// TestSuperStripes checks which ranges of a DUP chunk hold superblock copies.
func TestSuperStripes(t *testing.T) {
	c := ondisk.Chunk{Length: 32 << 20, Type: ondisk.BlockGroupMetadata | ondisk.BlockGroupDup, StripeLen: StripeLen,
		Stripes: []ondisk.Stripe{{DevID: 1, Offset: 38797312}, {DevID: 1, Offset: 72351744}}}
	rs, err := superStripes(30408704, &c)
	if err != nil {
		t.Fatal(err)
	}
	// Physical 64 MiB is 28 MiB into the first stripe.
	want := Range{30408704 + (64<<20 - 38797312), 30408704 + (64<<20 - 38797312) + StripeLen}
	if len(rs) != 1 || rs[0] != want {
		t.Fatalf("super stripes %v, want [%v]", rs, want)
	}
	m := NewManager(4096, 16384, NewDeviceSpace(ondisk.DevItem{DevID: 1, TotalBytes: 1 << 30}))
	g, err := m.newGroup(30408704, c)
	if err != nil {
		t.Fatal(err)
	}
	if g.Super() != StripeLen || g.Free() != c.Length-StripeLen || g.check() != nil {
		t.Fatalf("group %v", g)
	}
}

// TestAccounting walks an extent through its states.
func TestAccounting(t *testing.T) {
	dev := NewDeviceSpace(ondisk.DevItem{DevID: 1, TotalBytes: 1 << 30})
	m := NewManager(4096, 16384, dev)
	c := ondisk.Chunk{Length: 8 << 20, Type: ondisk.BlockGroupData, StripeLen: StripeLen,
		Stripes: []ondisk.Stripe{{DevID: 1, Offset: 8 << 20}}}
	g, _ := m.newGroup(8<<20, c)
	m.add(g)
	a, err := m.Alloc(ondisk.BlockGroupData, 1<<20, 4096, false)
	if err != nil {
		t.Fatal(err)
	}
	steps := []func() error{
		func() error { return m.Inserted(a, 1<<20) },
		func() error { return m.Freed(a, 1<<20) },
		func() error { m.Unpin(); return nil },
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if err := m.Check(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if g.Free() != 8<<20 || m.BytesUsed() != 0 {
		t.Fatalf("after unpin: %v", g)
	}
	if err := m.Freed(a, 1<<20); err == nil {
		t.Fatal("double free accepted")
	}
	if _, err := m.Alloc(ondisk.BlockGroupData, 9<<20, 4096, false); err == nil {
		t.Fatal("allocation larger than the group")
	}
}
