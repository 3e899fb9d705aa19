package freespace

import (
	"math/rand/v2"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// fragmented returns a 1 GiB group's tree built with the given free sectors.
func fragmented(b *testing.B, free func(m *model)) (*memEditor, *model) {
	bg := BlockGroup{1 << 30, 1 << 30}
	m := newModel(bg, 4096)
	free(m)
	items, err := Build(bg, m.extents(), 4096)
	if err != nil {
		b.Fatal(err)
	}
	ed := &memEditor{}
	if err := ed.insertAll(items); err != nil {
		b.Fatal(err)
	}
	info, _ := ReadInfo(ed, bg)
	m.bitmaps = info.UsingBitmaps()
	return ed, m
}

// BenchmarkLoad: Load of a heavily fragmented 1 GiB group held in bitmaps.
func BenchmarkLoad(b *testing.B) {
	for _, c := range []struct {
		name string
		free func(m *model)
	}{
		{"every-other-sector", func(m *model) {
			for i := uint64(0); i < m.n; i += 2 {
				m.set(i, 1, true)
			}
		}},
		{"random-20k-extents", func(m *model) {
			r := rand.New(rand.NewPCG(1, 1))
			for range 20000 {
				m.set(r.Uint64N(m.n-16), 1+r.Uint64N(16), true)
			}
		}},
		{"extents-1k", func(m *model) {
			for i := uint64(0); i < 1000; i++ {
				m.set(i*200, 100, true)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ed, m := fragmented(b, c.free)
			var n int
			for b.Loop() {
				ext, err := Load(ed, m.bg, 4096)
				if err != nil {
					b.Fatal(err)
				}
				n = len(ext)
			}
			b.ReportMetric(float64(n), "extents")
			b.ReportMetric(map[bool]float64{true: 1}[m.bitmaps], "bitmaps")
		})
	}
}

// BenchmarkChurn: a RemoveFree of a few sectors and the AddFree that gives
// them back, on a 1 GiB group in either layout.
func BenchmarkChurn(b *testing.B) {
	for _, c := range []struct {
		name   string
		chunks uint64
	}{
		{"extents-1000", 1000},
		{"bitmaps-5000", 5000},
	} {
		b.Run(c.name, func(b *testing.B) {
			ed, m := fragmented(b, func(m *model) {
				stride := m.n / c.chunks
				for i := uint64(0); i < c.chunks; i++ {
					m.set(i*stride, stride-8, true)
				}
			})
			free := m.extents()
			r := rand.New(rand.NewPCG(2, 2))
			for b.Loop() {
				x := free[r.IntN(len(free))]
				n := 1 + r.Uint64N(8)
				off := r.Uint64N(x.Length/4096-n) * 4096
				if err := RemoveFree(ed, m.bg, x.Start+ondiskAddr(off), n*4096, 4096); err != nil {
					b.Fatal(err)
				}
				if err := AddFree(ed, m.bg, x.Start+ondiskAddr(off), n*4096, 4096); err != nil {
					b.Fatal(err)
				}
			}
			info, _ := ReadInfo(ed, m.bg)
			b.ReportMetric(map[bool]float64{true: 1}[info.UsingBitmaps()], "bitmaps")
		})
	}
}

func ondiskAddr(n uint64) ondisk.LogicalAddr { return ondisk.LogicalAddr(n) }
