package treelog

import (
	"maps"
	"slices"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// A directory logged whole (modeDir) is planned index by index: each
// DIR_INDEX in the ranges the log covers is classified against the last
// commit (the same entry, a new one naming an inode to log, a committed
// one gone, or a reason to commit instead). The classification of an
// index only changes when its entry changes (fsops reports every DIR_INDEX
// it inserts or deletes: Writer.DirIndexChanged) or when the inode it
// names changes (Writer.Touched), so the directory's state is kept for the
// running transaction and the next fsync classifies only those indexes and
// the spans that stopped being unchanged leaves. A directory fsync thus
// costs the entries changed since its last fsync, not all its entries (an
// fsync after each unlink in a large directory). mirrors the kernel's
// logging of only the dir items changed since the directory was last
// logged (last_dir_index_offset, btrfs_del_dir_entries_in_log)

// verifyKept makes every kept directory state and kept plan be checked
// against ones made from scratch; the differences are listed in
// keptMismatch (the tests set it, and fail on any).
var (
	verifyKept   = false
	keptMismatch []error
)

// dirCache holds the directory states of the running transaction.
type dirCache struct {
	states map[ondisk.InodeRef]*dirState
	// deps lists, for an inode named by a classified index, the directory
	// indexes whose classification depends on it.
	deps map[ondisk.InodeRef][]dirIndex
}

type dirIndex struct {
	dir   ondisk.ObjectID // in the inode's subvolume
	index uint64
}

// dirState is what the classification of one directory found.
type dirState struct {
	transid ondisk.Generation
	holes   []indexRange // the unchanged spans it was made with
	wants   map[uint64]wantRec
	keep    map[uint64]bool // unchanged subvolume entries (left out of the ranges)
	reasons map[uint64]reasonRec
	pending map[uint64]bool // indexes to classify again
}

type reasonRec struct {
	reason string
	gone   bool // of a committed entry gone from the running tree
}

// entryClass is what one index adds to the plan.
type entryClass struct {
	want   wantRec // ino 0: nothing
	keep   bool
	reason string
	gone   bool
	dep    ondisk.ObjectID // the inode the class depends on (0: none)
}

func (c *dirCache) reset() {
	clear(c.states)
	clear(c.deps)
}

// changed records that index of dir was inserted or deleted.
func (c *dirCache) changed(dir ondisk.InodeRef, index uint64) {
	if st := c.states[dir]; st != nil {
		st.pending[index] = true
	}
}

// touched records that inode id changed.
func (c *dirCache) touched(id ondisk.InodeRef) {
	ds, ok := c.deps[id]
	if !ok {
		return
	}
	for _, d := range ds {
		if st := c.states[ondisk.InodeRef{Root: id.Root, Ino: d.dir}]; st != nil {
			st.pending[d.index] = true
		}
	}
	delete(c.deps, id)
}

func newDirState(transid ondisk.Generation, holes []indexRange) *dirState {
	return &dirState{transid: transid, holes: holes, wants: map[uint64]wantRec{}, keep: map[uint64]bool{},
		reasons: map[uint64]reasonRec{}, pending: map[uint64]bool{}}
}

func (st *dirState) clearIndex(i uint64) {
	delete(st.wants, i)
	delete(st.keep, i)
	delete(st.reasons, i)
}

// put records class c of index i (of directory dir); deps, if not nil,
// gets the dependency.
func (st *dirState) put(c *dirCache, subvol, dir ondisk.ObjectID, i uint64, cl entryClass) {
	st.clearIndex(i)
	if cl.want.ino != 0 {
		st.wants[i] = cl.want
	}
	if cl.keep {
		st.keep[i] = true
	}
	if cl.reason != "" {
		st.reasons[i] = reasonRec{cl.reason, cl.gone}
	}
	if cl.dep != 0 && c != nil {
		if c.deps == nil {
			c.deps = map[ondisk.InodeRef][]dirIndex{}
		}
		id := ondisk.InodeRef{Root: subvol, Ino: cl.dep}
		d := dirIndex{dir, i}
		if ds := c.deps[id]; len(ds) == 0 || ds[len(ds)-1] != d {
			c.deps[id] = append(ds, d)
		}
	}
}

// dirResult is what a directory logged whole adds to the plan.
type dirResult struct {
	reason string
	wants  []wantRec // in index order
	ranges []indexRange
}

// result assembles the plan of the directory from its classes: the reason
// of the lowest index (entries of the running tree first), else the
// wanted inodes and the ranges outside the holes and kept indexes.
func (st *dirState) result(holes []indexRange) dirResult {
	if len(st.reasons) > 0 {
		best, bestGone, reason := uint64(0), true, ""
		for i, r := range st.reasons {
			if reason == "" || bestGone && !r.gone || bestGone == r.gone && i < best {
				best, bestGone, reason = i, r.gone, r.reason
			}
		}
		return dirResult{reason: reason}
	}
	idx := slices.Sorted(maps.Keys(st.wants))
	wants := make([]wantRec, len(idx))
	for j, i := range idx {
		wants[j] = st.wants[i]
	}
	hs := slices.Clone(holes)
	for k := range st.keep {
		hs = append(hs, indexRange{k, k})
	}
	return dirResult{wants: wants, ranges: complement(hs)}
}

func (r dirResult) equal(o dirResult) bool {
	return r.reason == o.reason && slices.Equal(r.wants, o.wants) && slices.Equal(r.ranges, o.ranges)
}

// dirPlan classifies directory dir (logged whole), from its kept state when
// there is one.
func (p *planner) dirPlan(dir ondisk.ObjectID) (dirResult, error) {
	holes, err := unchangedSpans(p.t, dir, p.h.Transid())
	if err != nil {
		return dirResult{}, p.errorf(dir, "entries: %w", err)
	}
	if p.dirs == nil {
		st, err := p.fullState(nil, dir, holes)
		if err != nil {
			return dirResult{}, err
		}
		return st.result(holes), nil
	}
	st, err := p.keptState(dir, holes)
	if err != nil {
		return dirResult{}, err
	}
	res := st.result(holes)
	if verifyKept {
		full, err := p.fullState(nil, dir, holes)
		if err != nil {
			return dirResult{}, err
		}
		if f := full.result(holes); !f.equal(res) {
			err := p.errorf(dir, "kept directory state %+v differs from a new classification %+v", res, f)
			keptMismatch = append(keptMismatch, err) // a fallback to a commit would hide it
			return dirResult{}, err
		}
	}
	return res, nil
}

// fullState classifies every index of dir outside holes.
func (p *planner) fullState(c *dirCache, dir ondisk.ObjectID, holes []indexRange) (*dirState, error) {
	st := newDirState(p.h.Transid(), holes)
	for _, r := range complement(holes) {
		if err := p.classifySpan(c, st, dir, r); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// keptState brings the kept state of dir up to date (or makes it).
func (p *planner) keptState(dir ondisk.ObjectID, holes []indexRange) (*dirState, error) {
	c := p.dirs
	if c.states == nil {
		c.states = map[ondisk.InodeRef]*dirState{}
	}
	id := ondisk.InodeRef{Root: p.subvol, Ino: dir}
	st := c.states[id]
	if st == nil || st.transid != p.h.Transid() || !within(holes, st.holes) {
		delete(c.states, id)
		st, err := p.fullState(c, dir, holes)
		if err != nil {
			return nil, err
		}
		c.states[id] = st
		return st, nil
	}
	fail := func(err error) (*dirState, error) {
		delete(c.states, id)
		return nil, err
	}
	// Spans of leaves changed since: classified whole (no class lies in a
	// hole, so there is nothing to clear).
	for _, r := range subtract(st.holes, holes) {
		if err := p.classifySpan(c, st, dir, r); err != nil {
			return fail(err)
		}
	}
	for i := range st.pending {
		if inRangesOf(holes, i) {
			// a change in a leaf the transaction did not change: not
			// possible; classify from scratch rather than trust the state
			delete(c.states, id)
			return p.keptState(dir, holes)
		}
		st.clearIndex(i)
		if err := p.classifySpan(c, st, dir, indexRange{i, i}); err != nil {
			return fail(err)
		}
	}
	clear(st.pending)
	st.holes = holes
	return st, nil
}

// classifySpan classifies the indexes of dir in r (committed and running).
func (p *planner) classifySpan(c *dirCache, st *dirState, dir ondisk.ObjectID, r indexRange) error {
	var committed map[uint64]inode.DirEntry
	if err := readIndexes(p.ct, dir, r, func(e inode.DirEntry) bool {
		if committed == nil {
			committed = map[uint64]inode.DirEntry{}
		}
		committed[e.Index] = e
		return true
	}); err != nil {
		return p.errorf(dir, "committed entries: %w", err)
	}
	var cerr error
	err := readIndexes(p.t, dir, r, func(e inode.DirEntry) bool {
		var cp *inode.DirEntry
		if ce, had := committed[e.Index]; had {
			cp = &ce
			delete(committed, e.Index)
		}
		var cl entryClass
		cl, cerr = p.classify(dir, cp, &e)
		if cerr != nil {
			return false
		}
		st.put(c, p.subvol, dir, e.Index, cl)
		return true
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return p.errorf(dir, "entries: %w", err)
	}
	for i, ce := range committed {
		cl, err := p.classify(dir, &ce, nil)
		if err != nil {
			return err
		}
		st.put(c, p.subvol, dir, i, cl)
	}
	return nil
}

// classify says what one index adds to the plan: c is the last commit's
// entry there, e the running tree's (either may be nil).
func (p *planner) classify(dir ondisk.ObjectID, c, e *inode.DirEntry) (entryClass, error) {
	if e != nil {
		if c != nil && c.Location != e.Location {
			// the index of a committed name given to another inode (see
			// indexTaken): replay would unlink the committed one
			return entryClass{reason: ReasonIndexReused}, nil
		}
		same := c != nil && c.Name == e.Name && c.Location == e.Location && c.Type == e.Type
		if e.IsSubvol() {
			// an unchanged subvolume entry stays out of the log's ranges
			if !same {
				return entryClass{reason: ReasonSubvolEntry}, nil
			}
			return entryClass{keep: true}, nil
		}
		if same {
			return entryClass{}, nil
		}
		reason, w, err := p.entry(*e)
		return entryClass{reason: reason, want: w, dep: e.Location.ObjectID}, err
	}
	if c == nil {
		return entryClass{}, nil
	}
	// A committed entry gone from the running directory.
	if c.IsSubvol() {
		return entryClass{reason: ReasonSubvolEntry, gone: true}, nil
	}
	ino := c.Location.ObjectID
	cl := entryClass{gone: true, dep: ino}
	ii, ok, err := inodeIn(p.t, ino)
	if err != nil {
		return cl, p.errorf(dir, "committed entry %q: %w", c.Name, err)
	}
	ok = ok && ii.NLink > 0
	switch {
	case !ok && c.Type == item.FTDir:
		// replay unlinks its name; it must have had no entries to leave
		// behind
		empty, err := p.committedEmpty(ino)
		if err != nil {
			return cl, err
		}
		if !empty {
			cl.reason = ReasonDirRemoved
		}
	case ok && ii.Mode&item.SIFMT == item.SIFDIR:
		cl.want = wantRec{ino, modeExists}
	case ok:
		cl.want = wantRec{ino, modeAll}
	}
	return cl, nil
}

// within reports whether every span of a lies inside a span of b (both
// sorted).
func within(a, b []indexRange) bool {
	for _, r := range a {
		j := sort.Search(len(b), func(j int) bool { return b[j].last >= r.first })
		if j == len(b) || b[j].first > r.first || b[j].last < r.last {
			return false
		}
	}
	return true
}

// subtract returns the parts of the spans of a outside the spans of b
// (both sorted, b's spans each inside one of a's: see within).
func subtract(a, b []indexRange) []indexRange {
	var out []indexRange
	j := 0
	for _, r := range a {
		start := r.first
		for ; j < len(b) && b[j].first <= r.last; j++ {
			if b[j].first > start {
				out = append(out, indexRange{start, b[j].first - 1})
			}
			if b[j].last == ^uint64(0) {
				start, r.last = 1, 0 // nothing after
				break
			}
			start = b[j].last + 1
		}
		if start <= r.last {
			out = append(out, indexRange{start, r.last})
		}
	}
	return out
}

// inRangesOf reports whether i lies in one of the sorted spans rs.
func inRangesOf(rs []indexRange, i uint64) bool {
	j := sort.Search(len(rs), func(j int) bool { return rs[j].last >= i })
	return j < len(rs) && rs[j].first <= i
}
