package delayedref

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func TestMerge(t *testing.T) {
	var q Queue
	r1 := TreeRef(5, 0)
	r2 := TreeRef(0, 4096)
	d := DataRef(5, 257, 0, 0)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(q.Allocated(8192, 4096, 1, r1, 1))
	must(q.Add(8192, 4096, 1, r2, 1))
	must(q.Add(8192, 4096, 1, r1, -1))
	h := q.Lookup(8192)
	if !h.MustInsert || h.RefMod() != 1 || h.Level != 1 || len(h.Mods()) != 1 || h.Mods()[0].Ref != r2 {
		t.Fatalf("head %+v mods %v", h, h.Mods())
	}
	must(q.Add(1<<20, 1<<20, 0, d, 1))
	if err := q.Add(1<<20, 4096, 0, d, 1); err == nil {
		t.Fatal("conflicting size accepted")
	}
	must(q.Add(1<<20, 1<<20, 0, DataRef(5, 258, 0, 0), -1))
	mods := q.Lookup(1 << 20).Mods()
	if len(mods) != 2 || mods[0].Count != 1 || mods[1].Count != -1 {
		t.Fatalf("adds must come before drops: %v", mods)
	}
	heads := q.TakeAll()
	if len(heads) != 2 || heads[0].Bytenr != 8192 || q.Len() != 0 {
		t.Fatalf("TakeAll: %v", heads)
	}
	if DataRef(5, 257, 0, 4096).Type != ondisk.SharedDataRefKey || TreeRef(5, 0).Type != ondisk.TreeBlockRefKey {
		t.Fatal("ref types")
	}
}
