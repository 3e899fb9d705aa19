package freespace

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// extentPlan is what converting bitmaps to extents knows about the windows:
// how many runs of free sectors each bitmap holds, which window starts are
// crossed by a run, and for a crossed start with one side converted, the far
// end of the extent record on that side.
type extentPlan struct {
	g       *geom
	runs    []int32
	joined  []bool   // joined[j]: a free run crosses the start of window j (j >= 1)
	endAt   []uint64 // endAt[j]: start of the record ending at window j's start (j-1 converted, j not)
	startAt []uint64 // startAt[j]: end of the record starting at window j's start (j converted, j-1 not)
	done    []bool
	bits    [BitmapSize]byte
	scratch []int
	reader  *bitmapReader
}

// toExtents converts a block group's free space from bitmaps to extent
// records, one window at a time (see the package comment); the records it
// leaves are the kernel's.
// mirrors convert_free_space_to_extents
func toExtents(e Editor, g *geom, info Info) error {
	n := g.windows
	p := &extentPlan{g: g, runs: make([]int32, n), joined: make([]bool, n+1),
		endAt: make([]uint64, n+1), startAt: make([]uint64, n+1), done: make([]bool, n), scratch: make([]int, n),
		reader: newBitmapReader(g)}
	if err := p.survey(e, info); err != nil {
		return err
	}
	for range n {
		w := p.next()
		if err := p.convert(e, w, p.bits[:g.dataSize(w)]); err != nil {
			return err
		}
		p.done[w] = true
	}
	info.Flags &^= FlagUsingBitmaps
	return e.Update(InfoKey(g.bg()), info.Encode())
}

// survey reads the bitmaps once, checks them against extent_count and fills
// in the plan.
func (p *extentPlan) survey(e Editor, info Info) error {
	g := p.g
	w := 0
	last := false
	var total int64
	var bad error
	min, max := g.groupKeys()
	err := e.Range(min, max, func(k ondisk.Key, data []byte) bool {
		if bad = g.checkBitmap(w, k, data); bad != nil {
			return false
		}
		nbits := g.sectors(k.Offset)
		runs(data, nbits, func(uint64, uint64) error { p.runs[w]++; return nil })
		if w > 0 {
			p.joined[w] = last && testBit(data, 0)
		}
		last = testBit(data, nbits-1)
		total += int64(p.runs[w]) - int64(b2i(p.joined[w]))
		w++
		return true
	})
	if err := firstErr(err, bad); err != nil {
		return err
	}
	if w != g.windows {
		return corrupt("block group %d uses bitmaps but has %d of its %d bitmaps", g.start, w, g.windows)
	}
	if total != int64(info.ExtentCount) {
		return corrupt("incorrect extent count for block group %d: counted %d, expected %d", g.start, total, info.ExtentCount)
	}
	return nil
}

// checkBitmap checks that k is window w's bitmap item and data its size.
func (g *geom) checkBitmap(w int, k ondisk.Key, data []byte) error {
	if w >= g.windows || k != g.bitmapKey(w) {
		return corrupt("unexpected %v among the free space bitmaps of block group %d+%d", k, g.start, g.end-g.start)
	}
	if len(data) != g.dataSize(w) {
		return corrupt("free space bitmap %v has %d bytes, want %d", k, len(data), g.dataSize(w))
	}
	return nil
}

// merges reports whether window w's first (left) or last (right) run joins a
// record of an already converted neighbour.
func (p *extentPlan) merges(w int) (left, right bool) {
	left = w > 0 && p.joined[w] && p.done[w-1]
	right = w+1 < p.g.windows && p.joined[w+1] && p.done[w+1]
	return left, right
}

// cost is how many bytes converting window w now adds to the tree: a record
// per run, less the bitmap item and one record per merge with a neighbour.
func (p *extentPlan) cost(w int) int {
	l, r := p.merges(w)
	return itemCost*(int(p.runs[w])-b2i(l)-b2i(r)) - itemCost - p.g.dataSize(w)
}

// linked reports whether a free run crosses from window j-1 into window j,
// both unconverted.
func (p *extentPlan) linked(j int) bool { return p.joined[j] && !p.done[j-1] && !p.done[j] }

// next picks the window to convert: see pick.
func (p *extentPlan) next() int { return pick(p.g.windows, p.done, p, p.scratch) }

// convert replaces window w's bitmap item by extent records, one per run,
// joining runs at the window's edges with the records of converted neighbours.
func (p *extentPlan) convert(e Editor, w int, bits []byte) error {
	g := p.g
	ws, we := g.window(w)
	if err := p.reader.read(e, w, bits); err != nil {
		return err
	}
	if err := e.Delete(g.bitmapKey(w)); err != nil {
		return err
	}
	mergeLeft, mergeRight := p.merges(w)
	return runs(bits, g.sectors(we-ws), func(first, end uint64) error {
		r := span{ws + first<<g.shift, ws + end<<g.shift}
		if r.s == ws && mergeLeft {
			old := span{p.endAt[w], ws}
			if err := e.Delete(old.key()); err != nil {
				return err
			}
			r.s = old.s
		}
		if r.e == we && mergeRight {
			old := span{we, p.startAt[w+1]}
			if err := e.Delete(old.key()); err != nil {
				return err
			}
			r.e = old.e
		}
		if err := e.Insert(r.key(), nil); err != nil {
			return err
		}
		// Remember the record's far ends where an unconverted window joins it.
		if j, ok := g.boundary(r.e); ok && p.joined[j] && !p.done[j] {
			p.endAt[j] = r.s
		}
		if j, ok := g.boundary(r.s); ok && p.joined[j] && !p.done[j-1] {
			p.startAt[j] = r.e
		}
		return nil
	})
}
