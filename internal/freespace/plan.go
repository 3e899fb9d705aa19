package freespace

// planner is what pick needs to know of a conversion's windows.
type planner interface {
	// cost is how many bytes converting window w now adds to the tree.
	cost(w int) int
	// linked reports whether unconverted windows j-1 and j share a free
	// extent: whichever converts second saves itemCost (one record fewer).
	linked(j int) bool
}

// pick chooses the next window a conversion converts, to keep the tree from
// growing above its size when the conversion started.
//
// While some window's conversion does not grow the tree, it takes the one
// that shrinks it most. When every one would grow it, no order avoids
// growing (the kernel avoids it only by buffering the whole group), so it
// grows as little as it can: it takes the cheapest window, preferring one in
// a chain of linked windows that shrinks the tree overall, then one next to
// a converted window (finishing a chain it started, whose links have paid),
// then one linked to a neighbour, then the lowest. Costs only fall as
// windows are converted.
// scratch holds windows ints for the chain totals.
func pick(windows int, done []bool, p planner, scratch []int) int {
	best, bestCost := -1, 0
	for w := range windows {
		if !done[w] {
			if c := p.cost(w); best < 0 || c < bestCost {
				best, bestCost = w, c
			}
		}
	}
	if bestCost <= 0 {
		return best
	}
	// Every window grows the tree: rank the cheapest ones.
	chainTotal := chainTotals(windows, done, p, scratch)
	rank := func(w int) [4]int {
		r := [4]int{p.cost(w), 1, 1, 1}
		if chainTotal[w] < 0 {
			r[1] = 0
		}
		if w > 0 && done[w-1] || w+1 < windows && done[w+1] {
			r[2] = 0
		}
		if w > 0 && !done[w-1] && p.linked(w) || w+1 < windows && !done[w+1] && p.linked(w+1) {
			r[3] = 0
		}
		return r
	}
	best = -1
	var bestRank [4]int
	for w := range windows {
		if done[w] {
			continue
		}
		if r := rank(w); best < 0 || less(r, bestRank) {
			best, bestRank = w, r
		}
	}
	return best
}

// chainTotals returns, for every unconverted window, what converting its
// whole chain of linked windows adds to the tree: their costs less the
// savings of the links between them.
func chainTotals(windows int, done []bool, p planner, total []int) []int {
	for w := 0; w < windows; {
		if done[w] {
			w++
			continue
		}
		sum, end := p.cost(w), w+1
		for ; end < windows && !done[end] && p.linked(end); end++ {
			sum += p.cost(end) - itemCost
		}
		for i := w; i < end; i++ {
			total[i] = sum
		}
		w = end
	}
	return total
}

func less(a, b [4]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
