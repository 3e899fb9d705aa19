package freespace

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// keyBatch bounds how many keys a conversion holds at once.
const keyBatch = 64

// bitmapPlan is what converting extents to bitmaps knows about the windows
// not yet converted: how many extent records lie wholly inside each, and the
// record (if any) crossing the start of each. Extent records only ever lie in
// windows not yet converted.
type bitmapPlan struct {
	g     *geom
	in    []int32
	cross []span // cross[j]: the record crossing the start of window j (j >= 1)
	done  []bool
	// scratch space, allocated once per conversion
	batch   [keyBatch]span
	n       int
	bad     error
	collect func(ondisk.Key, []byte) bool
	bits    [BitmapSize]byte
	scratch []int
}

// toBitmaps converts a block group's free space from extent records to
// bitmaps, one window at a time (see the package comment); the records it
// leaves are the kernel's.
// mirrors convert_free_space_to_bitmaps
func toBitmaps(e Editor, g *geom, info Info) error {
	p := &bitmapPlan{g: g, in: make([]int32, g.windows), cross: make([]span, g.windows+1),
		done: make([]bool, g.windows), scratch: make([]int, g.windows)}
	p.collect = p.collectRecord
	if err := p.survey(e, info); err != nil {
		return err
	}
	for range g.windows {
		w := p.next()
		if err := p.convert(e, w, p.bits[:g.dataSize(w)]); err != nil {
			return err
		}
		p.done[w] = true
	}
	info.Flags |= FlagUsingBitmaps
	return e.Update(InfoKey(g.bg()), info.Encode())
}

// survey reads the extent records once, checks them against extent_count and
// fills in the plan.
func (p *bitmapPlan) survey(e Editor, info Info) error {
	g := p.g
	var count uint32
	var prev span
	var bad error
	min, max := g.groupKeys()
	err := e.Range(min, max, func(k ondisk.Key, _ []byte) bool {
		var r span
		if r, bad = g.extentRecord(k); bad != nil {
			return false
		}
		if r.s < prev.e {
			bad = corrupt("free space extent %v overlaps the one before", k)
			return false
		}
		prev = r
		count++
		a, b := g.windowOf(r.s), g.windowOf(r.e-1)
		if a == b {
			p.in[a]++
		}
		for j := a + 1; j <= b; j++ {
			p.cross[j] = r
		}
		return true
	})
	if err := firstErr(err, bad); err != nil {
		return err
	}
	if count != info.ExtentCount {
		return corrupt("incorrect extent count for block group %d: counted %d, expected %d", g.start, count, info.ExtentCount)
	}
	return nil
}

// cost is how many bytes converting window w now adds to the tree: the bitmap
// item, less the records that vanish, plus one if a record spanning the whole
// window has to be cut in two.
func (p *bitmapPlan) cost(w int) int {
	c := itemCost + p.g.dataSize(w) - itemCost*int(p.in[w])
	if w > 0 && w+1 < p.g.windows && p.cross[w].e != 0 && p.cross[w] == p.cross[w+1] {
		c += itemCost
	}
	return c
}

// linked reports whether one record crosses from window j-1 into window j.
func (p *bitmapPlan) linked(j int) bool { return p.cross[j].e != 0 }

// next picks the window to convert: see pick.
func (p *bitmapPlan) next() int { return pick(p.g.windows, p.done, p, p.scratch) }

// convert replaces the extent records in window w by its bitmap item. Records
// reaching out of the window are cut at its edges; their outside pieces stay
// extent records of the neighbouring windows.
func (p *bitmapPlan) convert(e Editor, w int, bits []byte) error {
	g := p.g
	ws, we := g.window(w)
	clear(bits)
	if w > 0 && p.cross[w].e != 0 {
		if err := p.take(e, w, p.cross[w], bits); err != nil {
			return err
		}
	}
	// The records starting in the window, a batch at a time: the ones taken
	// are gone, and the piece cut off the last one starts at we.
	min := ondisk.Key{ObjectID: ondisk.ObjectID(ws), Type: ondisk.FreeSpaceExtentKey}
	max := ondisk.Key{ObjectID: ondisk.ObjectID(we - 1), Type: 0xff, Offset: ^uint64(0)}
	for {
		p.n, p.bad = 0, nil
		if err := firstErr(e.Range(min, max, p.collect), p.bad); err != nil {
			return err
		}
		if p.n == 0 {
			break
		}
		for _, r := range p.batch[:p.n] {
			if err := p.take(e, w, r, bits); err != nil {
				return err
			}
		}
	}
	return e.Insert(g.bitmapKey(w), bits)
}

// collectRecord adds a record to the batch (an Editor.Range callback).
func (p *bitmapPlan) collectRecord(k ondisk.Key, _ []byte) bool {
	p.batch[p.n], p.bad = p.g.extentRecord(k)
	p.n++
	return p.bad == nil && p.n < keyBatch
}

// take moves record r's part in window w into bits, deleting r and
// inserting back its pieces outside the window.
func (p *bitmapPlan) take(e Editor, w int, r span, bits []byte) error {
	g := p.g
	ws, we := g.window(w)
	lo, hi := max(r.s, ws), min(r.e, we)
	setBits(bits, g.sectors(lo-ws), g.sectors(hi-lo), true)
	if err := e.Delete(r.key()); err != nil {
		return err
	}
	if r.s < ws {
		if err := e.Insert(span{r.s, ws}.key(), nil); err != nil {
			return err
		}
		p.leftPiece(w, span{r.s, ws})
	}
	if r.e > we {
		if err := e.Insert(span{we, r.e}.key(), nil); err != nil {
			return err
		}
		p.rightPiece(w, span{we, r.e})
	}
	return nil
}

// leftPiece records that r, cut at the start of window w, is what remains of
// the record that crossed into w.
func (p *bitmapPlan) leftPiece(w int, r span) {
	p.cross[w] = span{}
	if a := p.g.windowOf(r.s); a == w-1 {
		p.in[a]++
	} else {
		for j := a + 1; j < w; j++ {
			p.cross[j] = r
		}
	}
}

// rightPiece records that r, cut at the end of window w, is what remains of
// the record that crossed out of w.
func (p *bitmapPlan) rightPiece(w int, r span) {
	p.cross[w+1] = span{}
	if b := p.g.windowOf(r.e - 1); b == w+1 {
		p.in[b]++
	} else {
		for j := w + 2; j <= b; j++ {
			p.cross[j] = r
		}
	}
}
