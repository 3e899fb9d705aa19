// Package pagecache holds buffered writes in memory per inode until they are
// written back (delayed allocation: adjacent small writes merge into one
// range, so a stream of 4 KiB writes becomes one large extent on disk), and
// keeps a writeback list, so that sync walks only the inodes that are dirty
// or under writeback, never every cached inode.
package pagecache

import "sort"

// span is one contiguous dirty byte range.
type span struct {
	off  int64
	data []byte
}

func (s *span) end() int64 { return s.off + int64(len(s.data)) }

// dirtyRanges is a sorted, non-overlapping set of spans; spans touch only
// where a stream passed maxSpan.
type dirtyRanges struct {
	spans []span
	bytes int64
	pool  *bufPool // buffers of maxSpan bytes to reuse; nil: allocate
}

// buf returns a buffer of n bytes (their content undefined) with room for
// capacity.
func (d *dirtyRanges) buf(n, capacity int) []byte {
	if capacity == maxSpan && d.pool != nil {
		return d.pool.get()[:n]
	}
	return make([]byte, n, capacity)
}

// write merges data at off, overwriting older dirty bytes and joining
// neighbours that touch it.
func (d *dirtyRanges) write(off int64, data []byte) {
	end := off + int64(len(data))
	// first span whose end >= off (touching or overlapping)
	i := sort.Search(len(d.spans), func(i int) bool { return d.spans[i].end() >= off })
	j := i
	for j < len(d.spans) && d.spans[j].off <= end {
		j++
	}
	// A pure append to a span that reached maxSpan starts a new span: the
	// backend still gets maxSpan-sized extents, and the stream is copied
	// about twice instead of once per growth step.
	capacity := len(data)
	if j == i+1 && off == d.spans[i].end() && len(d.spans[i].data)+len(data) > maxSpan {
		i = j
		capacity = max(maxSpan, len(data)) // a stream: it fills this one too
	}
	if i == j {
		buf := d.buf(len(data), capacity)
		copy(buf, data)
		d.spans = append(d.spans, span{})
		copy(d.spans[i+1:], d.spans[i:])
		d.spans[i] = span{off, buf}
		d.bytes += int64(len(buf))
		return
	}
	start := min(off, d.spans[i].off)
	last := max(end, d.spans[j-1].end())
	var buf []byte
	first := &d.spans[i]
	if first.off == start && cap(first.data) >= int(last-start) && j == i+1 {
		buf = first.data[:last-start]
	} else {
		buf = d.buf(int(last-start), growCap(int(last-start)))
		for k := i; k < j; k++ {
			copy(buf[d.spans[k].off-start:], d.spans[k].data)
		}
	}
	copy(buf[off-start:], data)
	for k := i; k < j; k++ {
		d.bytes -= int64(len(d.spans[k].data))
	}
	d.bytes += int64(len(buf))
	d.spans[i] = span{start, buf}
	d.spans = append(d.spans[:i+1], d.spans[j:]...)
}

// growCap leaves room for appends so a sequential stream does not copy
// the whole range on every write.
func growCap(n int) int {
	switch {
	case n < 64<<10:
		return 64 << 10
	case n >= maxSpan:
		return n
	}
	return min(2*n, maxSpan)
}

// maxSpan bounds how far appends grow one span, so how much one append
// copies and how much room a stream's last span holds unused; a stream is
// written back as ranges of this size, which fsops joins into extents of
// up to 128 MiB (fsops/tail.go). Buffers of this size are reused (bufPool).
// A variable only so tests can use a small one.
var maxSpan = 8 << 20

// bufPool keeps buffers of maxSpan bytes that writeback is done with, for
// the next spans of streams: a stream then allocates nothing once it runs,
// and the process does not hold the written buffers as garbage until the
// collector runs (memory stays near the dirty limit). Guarded by Cache.mu.
type bufPool struct {
	free [][]byte
}

// maxPooled bounds the buffers kept.
const maxPooled = 8

func (p *bufPool) get() []byte {
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return b
	}
	return make([]byte, 0, maxSpan)
}

// put keeps b, which nothing refers to any more, when it is a whole
// maxSpan buffer.
func (p *bufPool) put(b []byte) {
	if cap(b) == maxSpan && len(p.free) < maxPooled {
		p.free = append(p.free, b[:0])
	}
}

// overlay copies dirty bytes over p (which holds file bytes at off).
func (d *dirtyRanges) overlay(p []byte, off int64) { overlaySpans(d.spans, p, off) }

// overlaySpans copies the bytes of sorted, non-overlapping spans over p
// (which holds file bytes at off).
func overlaySpans(spans []span, p []byte, off int64) {
	end := off + int64(len(p))
	i := sort.Search(len(spans), func(i int) bool { return spans[i].end() > off })
	for ; i < len(spans) && spans[i].off < end; i++ {
		s := &spans[i]
		lo := max(s.off, off)
		hi := min(s.end(), end)
		copy(p[lo-off:hi-off], s.data[lo-s.off:hi-s.off])
	}
}

// truncate drops dirty bytes at or beyond size.
func (d *dirtyRanges) truncate(size int64) {
	out := d.spans[:0]
	for _, s := range d.spans {
		switch {
		case s.end() <= size:
			out = append(out, s)
		case s.off < size:
			d.bytes -= s.end() - size
			s.data = s.data[:size-s.off]
			out = append(out, s)
		default:
			d.bytes -= int64(len(s.data))
		}
	}
	d.spans = out
}

// take removes and returns all spans.
func (d *dirtyRanges) take() []span {
	s := d.spans
	d.spans = nil
	d.bytes = 0
	return s
}

// takeSettled removes and returns the dirty bytes of a stream that have
// settled: the kernel's FUSE writeback sends a file's pages in many
// requests, served concurrently and so stored out of order, and writing
// a range that ends at a hole still being filled, or the bytes at the end
// of the stream, would cut the stream's extent there. So of a few runs of
// touching spans (a stream with holes in flight) only the first is taken,
// nothing when a hole lies between frontier (where the last writeback of
// the inode ended) and the first span, unless holes is false (the caller
// waited long enough for it), and of a single run all but its last hold
// bytes. Many runs (random writes) and at most hold bytes are taken
// whole. hole reports that nothing was taken for a hole.
func (d *dirtyRanges) takeSettled(hold, frontier int64, holes bool) (out []span, hole bool) {
	if hold <= 0 || len(d.spans) == 0 {
		return d.take(), false
	}
	firstRun, runs := len(d.spans), 1 // spans in the first run; runs
	for i := 1; i < len(d.spans); i++ {
		if d.spans[i].off != d.spans[i-1].end() {
			if runs == 1 {
				firstRun = i
			}
			runs++
		}
	}
	if runs > streamRuns {
		return d.take(), false
	}
	if s := d.spans[0]; holes && frontier > 0 && s.off > frontier && s.off-frontier <= maxHole {
		return nil, true
	}
	if d.bytes <= hold {
		return d.take(), false
	}
	n := firstRun
	if runs == 1 {
		// all but the last hold bytes: whole spans, and the one crossing
		// the line cut there
		line := d.maxEnd() - hold
		for n = 0; n < len(d.spans) && d.spans[n].end() <= line; n++ {
		}
		if n < len(d.spans) && d.spans[n].off < line {
			sp := &d.spans[n]
			k := line - sp.off
			// full slice expression: the taken bytes cannot grow into the rest
			out = append(out, span{sp.off, sp.data[:k:k]})
			sp.off, sp.data = line, sp.data[k:]
			d.bytes -= k
		}
	}
	taken := append(append([]span(nil), d.spans[:n]...), out...)
	for _, sp := range d.spans[:n] {
		d.bytes -= int64(len(sp.data))
	}
	d.spans = append(d.spans[:0], d.spans[n:]...)
	return taken, false
}

// streamRuns is how many runs of touching spans an inode written as a
// stream may have (holes whose WRITEs are on their way); more is random
// writes.
const streamRuns = 8

// maxHole is the largest hole below a stream's first dirty span that
// background writeback waits for (the WRITEs in flight cover at most a
// few dozen MiB).
const maxHole = 64 << 20

// maxEnd is the end of the last dirty byte, or 0.
func (d *dirtyRanges) maxEnd() int64 {
	if len(d.spans) == 0 {
		return 0
	}
	return d.spans[len(d.spans)-1].end()
}

// writeUnder merges data at off without overwriting bytes already dirty
// (used to restore a failed writeback beneath newer writes).
func (d *dirtyRanges) writeUnder(off int64, data []byte) {
	merged := append([]byte(nil), data...)
	d.overlay(merged, off)
	d.write(off, merged)
}
