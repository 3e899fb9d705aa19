package check

import "sort"

// rng is the byte range [start, end).
type rng struct{ start, end uint64 }

// rangeList is a sorted list of disjoint ranges.
type rangeList []rng

// appendMerged adds r, which must not start before the last range starts,
// merging it with the last range when they touch or overlap.
func (l *rangeList) appendMerged(r rng) {
	if r.end <= r.start {
		return
	}
	if n := len(*l); n > 0 && (*l)[n-1].end >= r.start {
		if r.end > (*l)[n-1].end {
			(*l)[n-1].end = r.end
		}
		return
	}
	*l = append(*l, r)
}

// normalize sorts and merges a list built out of order.
func (l rangeList) normalize() rangeList {
	sort.Slice(l, func(i, j int) bool { return l[i].start < l[j].start })
	var out rangeList
	for _, r := range l {
		out.appendMerged(r)
	}
	return out
}

// covered returns how many bytes of [start, end) the list covers.
func (l rangeList) covered(start, end uint64) uint64 {
	i := sort.Search(len(l), func(i int) bool { return l[i].end > start })
	var n uint64
	for ; i < len(l) && l[i].start < end; i++ {
		n += min(l[i].end, end) - max(l[i].start, start)
	}
	return n
}

// subtract returns the parts of l not covered by m (both sorted, disjoint).
func (l rangeList) subtract(m rangeList) rangeList {
	var out rangeList
	for _, r := range l {
		cur := r.start
		k := sort.Search(len(m), func(i int) bool { return m[i].end > cur })
		for ; k < len(m) && m[k].start < r.end; k++ {
			if m[k].start > cur {
				out = append(out, rng{cur, m[k].start})
			}
			if m[k].end > cur {
				cur = m[k].end
			}
		}
		if cur < r.end {
			out = append(out, rng{cur, r.end})
		}
	}
	return out
}
