package blockgroup

import "sort"

// Range is [Start, End) of logical (or, for device space, physical) bytes.
type Range struct {
	Start, End uint64
}

// Len is the number of bytes in the range.
func (r Range) Len() uint64 { return r.End - r.Start }

// RangeSet is a set of disjoint, non-adjacent ranges kept sorted (the
// in-memory free space of a block group, like the kernel's free space
// cache ctl but without bitmaps). The zero value is empty.
type RangeSet struct {
	r     []Range
	total uint64
}

// Total is the number of bytes in the set.
func (s *RangeSet) Total() uint64 { return s.total }

// Len is the number of ranges.
func (s *RangeSet) Len() int { return len(s.r) }

// Ranges returns a copy of the ranges in order.
func (s *RangeSet) Ranges() []Range { return append([]Range(nil), s.r...) }

// first returns the index of the first range whose End > addr.
func (s *RangeSet) first(addr uint64) int {
	return sort.Search(len(s.r), func(i int) bool { return s.r[i].End > addr })
}

// Add inserts [start, start+n), merging with neighbours. Bytes already in
// the set are counted once.
func (s *RangeSet) Add(start, n uint64) {
	if n == 0 {
		return
	}
	end := start + n
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].End >= start })
	j := i
	for j < len(s.r) && s.r[j].Start <= end {
		start = min(start, s.r[j].Start)
		end = max(end, s.r[j].End)
		s.total -= s.r[j].Len()
		j++
	}
	nr := Range{start, end}
	s.total += nr.Len()
	if j == i {
		s.r = append(s.r, Range{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = nr
		return
	}
	s.r[i] = nr
	s.r = append(s.r[:i+1], s.r[j:]...)
}

// Remove takes [start, start+n) out of the set (bytes not in it are ignored)
// and returns how many bytes it removed.
func (s *RangeSet) Remove(start, n uint64) uint64 {
	end := start + n
	removed := uint64(0)
	i := s.first(start)
	for i < len(s.r) && s.r[i].Start < end {
		r := s.r[i]
		lo, hi := max(r.Start, start), min(r.End, end)
		removed += hi - lo
		s.total -= hi - lo
		switch {
		case r.Start < lo && r.End > hi: // split
			s.r = append(s.r, Range{})
			copy(s.r[i+2:], s.r[i+1:])
			s.r[i] = Range{r.Start, lo}
			s.r[i+1] = Range{hi, r.End}
			return removed
		case r.Start < lo:
			s.r[i].End = lo
			i++
		case r.End > hi:
			s.r[i].Start = hi
			i++
		default:
			s.r = append(s.r[:i], s.r[i+1:]...)
		}
	}
	return removed
}

// Contains reports whether all of [start, start+n) is in the set.
func (s *RangeSet) Contains(start, n uint64) bool {
	i := s.first(start)
	return i < len(s.r) && s.r[i].Start <= start && s.r[i].End >= start+n
}

// Overlaps reports whether any byte of [start, start+n) is in the set.
func (s *RangeSet) Overlaps(start, n uint64) bool {
	i := s.first(start)
	return i < len(s.r) && s.r[i].Start < start+n
}

// Find returns the first address >= from (wrapping to the start of the set
// when nothing fits after it) where n bytes aligned to align fit, avoiding
// crossing a multiple of noCross when noCross > 0. ok is false when no range
// fits.
func (s *RangeSet) Find(n, align, noCross, from uint64) (uint64, bool) {
	if a, ok := s.find(n, align, noCross, from, s.first(from)); ok {
		return a, true
	}
	return s.find(n, align, noCross, 0, 0)
}

func (s *RangeSet) find(n, align, noCross, from uint64, i int) (uint64, bool) {
	for ; i < len(s.r); i++ {
		r := s.r[i]
		a := roundUp(max(r.Start, from), align)
		if noCross > 0 && n <= noCross && a/noCross != (a+n-1)/noCross {
			a = roundUp(a, noCross)
		}
		if a+n <= r.End {
			return a, true
		}
	}
	return 0, false
}

// Largest is the size of the largest range.
func (s *RangeSet) Largest() uint64 {
	m := uint64(0)
	for _, r := range s.r {
		m = max(m, r.Len())
	}
	return m
}

// Clear empties the set.
func (s *RangeSet) Clear() { s.r, s.total = nil, 0 }

func roundUp(v, a uint64) uint64 {
	if a <= 1 {
		return v
	}
	return (v + a - 1) / a * a
}

func roundDown(v, a uint64) uint64 {
	if a <= 1 {
		return v
	}
	return v / a * a
}
