package treelog

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// logMode says how much of an inode the log copies. A stronger mode
// includes what the weaker ones copy.
type logMode uint8

const (
	// modeExists copies the inode item, its names (INODE_REF/EXTREF) and
	// its xattrs: a new ancestor directory of a logged inode, or the old
	// parent of a renamed one. mirrors LOG_INODE_EXISTS
	modeExists logMode = iota + 1
	// modeAll also copies the file extents and the checksums of the new
	// data. mirrors LOG_INODE_ALL
	modeAll
	// modeDir copies a directory with every DIR_INDEX entry and one
	// DIR_LOG_INDEX range over all indexes, so replay makes its entries
	// exactly the logged ones. mirrors log_directory_changes
	modeDir
)

// planned is one inode of the log and what of it is copied.
type planned struct {
	mode logMode
	dir  bool
	// item is the inode item as the planner read it (valid during the
	// fsync of sequence number seq: the handle keeps the tree still), so
	// copying can tell an unchanged store without another lookup.
	item []byte
	seq  uint64
	// dels are DIR_INDEX indexes of committed names that replay must
	// remove (a name renamed or unlinked away from this directory), each
	// logged as a one-index DIR_LOG_INDEX range with no entry in it.
	dels []uint64
	// ranges are the DIR_INDEX ranges a directory logged whole (modeDir)
	// describes completely: its entries there are logged, and replay removes
	// committed names there that the log lacks. They leave out the leaves
	// the running transaction did not change (the same entries as the last
	// commit) and unchanged subvolume entries (replay does not link
	// subvolumes, so the committed entry must stay as it is).
	ranges []indexRange
}

// indexRange is a DIR_LOG_INDEX range, first and last index included.
type indexRange struct{ first, last uint64 }

// planner decides, for the fsync targets of one subvolume, which inodes
// the log must hold for replay to reproduce their names: new inodes need
// their new ancestors, renamed inodes the old parents (a deletion range),
// directories their new children. What the log cannot express is a
// fallback reason.
// mirrors btrfs_log_inode_parent, log_all_new_ancestors, btrfs_log_new_name
// and log_new_dir_dentries, as a plan computed anew on every fsync
type planner struct {
	h      *txn.Handle
	subvol ondisk.ObjectID
	t, ct  *ctree.Tree // the running and the committed subvolume tree
	plan   map[ondisk.ObjectID]*planned
	queue  []ondisk.ObjectID
	// targets are the fsync'd inodes: a directory among them is logged whole.
	targets map[ondisk.ObjectID]bool
	slab    *plannedSlab                   // where plan entries come from (the writer's)
	memo    map[ondisk.InodeRef]*visitMemo // the writer's, across fsyncs
	watch   *watchSet                      // memos still current (the writer's)
	fsynced ondisk.InodeRef                // the inode being fsync'd: always read
	dirs    *dirCache                      // directories logged whole (the writer's; nil: none kept)
	seq     uint64                         // the writer's fsync sequence number
	changed map[ondisk.ObjectID]bool       // plan entries made, changed or visited by this fsync (nil: not kept)
	rec     *visitMemo                     // what the inode being visited adds
}

func newPlanner(h *txn.Handle, f *txn.Engine, subvol ondisk.ObjectID) (*planner, string, error) {
	t, err := h.Tree(subvol)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ReasonDeleted, nil // deleted since an inode of it was fsync'd
	}
	if err != nil {
		return nil, "", err
	}
	ct, err := committedTree(h, f, subvol)
	if err != nil {
		return nil, "", err
	}
	if ct == nil {
		return nil, ReasonNewSubvol, nil
	}
	return &planner{h: h, subvol: subvol, t: t, ct: ct}, "", nil
}

// want adds ino to the plan with at least mode m.
func (p *planner) want(ino ondisk.ObjectID, m logMode) {
	if p.rec != nil {
		p.rec.wants = append(p.rec.wants, wantRec{ino, m})
	}
	pl := p.plan[ino]
	if pl == nil {
		pl := p.slab.get()
		pl.mode = m
		p.plan[ino] = pl
		p.queue = append(p.queue, ino)
		p.mark(ino)
		return
	}
	if m > pl.mode {
		pl.mode = m
		p.queue = append(p.queue, ino) // visit again for what the new mode needs
		p.mark(ino)
	}
}

// mark records that ino's plan entry was made or changed by this fsync.
func (p *planner) mark(ino ondisk.ObjectID) {
	if p.changed != nil {
		p.changed[ino] = true
	}
}

// run visits the queue until the plan is closed.
func (p *planner) run() (string, error) {
	for len(p.queue) > 0 {
		ino := p.queue[0]
		p.queue = p.queue[1:]
		if reason, err := p.visit(ino); err != nil || reason != "" {
			return reason, err
		}
	}
	return "", nil
}

func (p *planner) errorf(ino ondisk.ObjectID, format string, args ...any) error {
	return fmt.Errorf("log inode %d of subvolume %d: %w", ino, p.subvol, fmt.Errorf(format, args...))
}

// inodeIn reads ino from tree t; ok is false when it does not exist.
func inodeIn(t *ctree.Tree, ino ondisk.ObjectID) (item.InodeItem, bool, error) {
	ii, _, ok, err := inodeBytes(t, ino)
	return ii, ok, err
}

// inodeBytes reads ino's inode item from t, decoded and as stored.
func inodeBytes(t *ctree.Tree, ino ondisk.ObjectID) (item.InodeItem, []byte, bool, error) {
	data, ok, err := t.Lookup(ondisk.Key{ObjectID: ino, Type: ondisk.InodeItemKey})
	if err != nil || !ok {
		return item.InodeItem{}, nil, false, err
	}
	ii, err := item.DecodeInodeItem(data)
	if err != nil {
		return item.InodeItem{}, nil, false, fmt.Errorf("inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	return ii, data, true, nil
}

// isNew reports whether ino was created in the running transaction (it is
// not in the last commit).
func (p *planner) isNew(ino ondisk.ObjectID, ii item.InodeItem) (bool, error) {
	if ondisk.Generation(ii.Generation) == p.h.Transid() {
		return true, nil
	}
	_, ok, err := inodeIn(p.ct, ino)
	return !ok, err
}

func (p *planner) visit(ino ondisk.ObjectID) (string, error) {
	pl := p.plan[ino]
	id := ondisk.InodeRef{Root: p.subvol, Ino: ino}
	if m := p.memo[id]; m != nil && m.transid == p.h.Transid() && id != p.fsynced &&
		p.watch != nil && p.watch.has(id) {
		// Untouched since the memo was made: its inode item is m.fp.
		pl.dir, pl.item, pl.seq = m.dir, m.fp, p.seq
		p.mark(ino)
		if pl.dir && p.targets[ino] && pl.mode < modeDir {
			pl.mode = modeDir
		}
		if m.mode == pl.mode {
			p.replay(m, pl)
			return "", nil
		}
	}
	ii, raw, ok, err := inodeBytes(p.t, ino)
	if err != nil {
		return "", p.errorf(ino, "%w", err)
	}
	if !ok || ii.NLink == 0 {
		return ReasonDeleted, nil
	}
	pl.dir, pl.item, pl.seq = ii.Mode&item.SIFMT == item.SIFDIR, raw, p.seq
	p.mark(ino)
	if pl.dir && p.targets[ino] && pl.mode < modeDir {
		pl.mode = modeDir
	}
	if m := p.memo[id]; m != nil && m.transid == p.h.Transid() && m.mode == pl.mode && bytes.Equal(m.fp, raw) {
		// Planned before from this very inode item: the same plan.
		p.replay(m, pl)
		if p.watch != nil {
			p.watch.add(id)
		}
		return "", nil
	}
	rec := &visitMemo{transid: p.h.Transid(), mode: pl.mode, dir: pl.dir, fp: append([]byte(nil), raw...)}
	p.rec = rec
	defer func() { p.rec = nil }()
	fresh, err := p.isNew(ino, ii)
	if err != nil {
		return "", p.errorf(ino, "%w", err)
	}
	if fresh && ondisk.Generation(ii.Generation) == p.h.Transid() {
		// A number freed in this transaction may be given again (fsops
		// computes the next free number from the running tree): replay
		// would put this inode's items over the committed inode's.
		if _, old, err := inodeIn(p.ct, ino); err != nil {
			return "", p.errorf(ino, "committed inode: %w", err)
		} else if old {
			return ReasonInodeReused, nil
		}
	}
	if reason, err := p.names(ino, fresh); err != nil || reason != "" {
		return reason, err
	}
	if pl.dir && pl.mode == modeDir {
		if reason, err := p.entries(ino); err != nil || reason != "" {
			return reason, err
		}
	}
	if p.memo != nil {
		p.memo[id] = rec
		if p.watch != nil {
			p.watch.add(id)
		}
	}
	return "", nil
}

// replay adds to the plan what visiting an inode added when memo m was made.
func (p *planner) replay(m *visitMemo, pl *planned) {
	for _, w := range m.wants {
		p.want(w.ino, w.mode)
	}
	for _, d := range m.dels {
		p.del(d.ino, d.index)
	}
	pl.ranges = m.ranges
}

// del plans the removal of the committed name with DIR_INDEX index in dir.
func (p *planner) del(dir ondisk.ObjectID, index uint64) {
	rec := p.rec
	p.rec = nil
	p.want(dir, modeExists)
	p.rec = rec
	if rec != nil {
		rec.dels = append(rec.dels, delRec{dir, index})
	}
	pl := p.plan[dir]
	if !slices.Contains(pl.dels, index) { // a kept plan sees its deletions again
		pl.dels = append(pl.dels, index)
		p.mark(dir)
	}
}

// visitMemo is what visiting an inode added to the plan, valid while the
// inode item is the one it was computed from (every change of an inode's
// names or entries changes its inode item: ctime, sequence, size).
// Planning an fsync then costs a lookup per inode already in the log.
type visitMemo struct {
	transid ondisk.Generation
	mode    logMode
	dir     bool
	fp      []byte // the inode item as stored
	wants   []wantRec
	dels    []delRec
	ranges  []indexRange
}

type wantRec struct {
	ino  ondisk.ObjectID
	mode logMode
}

type delRec struct {
	ino   ondisk.ObjectID
	index uint64
}

func sameRef(a, b inode.Ref) bool {
	return a.Parent == b.Parent && a.Name == b.Name && a.Index == b.Index
}

// names plans what replay needs to give ino exactly its current names:
// new parents (when new themselves) are logged; a new name that the last
// commit gives another inode must belong to an inode that is gone; a
// committed name that is gone from a directory the log does not name ino
// in is logged as a deletion in that directory.
func (p *planner) names(ino ondisk.ObjectID, fresh bool) (string, error) {
	if ino == ondisk.FirstFreeObjectID {
		return "", nil // the subvolume's root directory: its name is in the root tree
	}
	cur, err := inode.Refs(p.t, ino)
	if err != nil {
		return "", p.errorf(ino, "%w", err)
	}
	var old []inode.Ref
	if !fresh {
		if old, err = inode.Refs(p.ct, ino); err != nil {
			return "", p.errorf(ino, "committed names: %w", err)
		}
	}
	for _, r := range cur {
		if slices.ContainsFunc(old, func(o inode.Ref) bool { return sameRef(o, r) }) {
			continue
		}
		if reason, err := p.newName(ino, r); err != nil || reason != "" {
			return reason, err
		}
	}
	for _, o := range old {
		if slices.ContainsFunc(cur, func(r inode.Ref) bool { return sameRef(o, r) }) {
			continue
		}
		if slices.ContainsFunc(cur, func(r inode.Ref) bool { return r.Parent == o.Parent }) {
			continue // replay of ino's refs in that directory removes the names it lacks
		}
		if _, ok, err := inodeIn(p.t, o.Parent); err != nil || !ok {
			if err != nil {
				return "", p.errorf(ino, "old parent %d: %w", o.Parent, err)
			}
			return ReasonDirRemoved, nil
		}
		p.del(o.Parent, o.Index)
	}
	return "", nil
}

// newName plans name r of ino, which the last commit does not have.
func (p *planner) newName(ino ondisk.ObjectID, r inode.Ref) (string, error) {
	pi, ok, err := inodeIn(p.t, r.Parent)
	if err != nil {
		return "", p.errorf(ino, "parent %d: %w", r.Parent, err)
	}
	if !ok {
		return ReasonDirRemoved, nil
	}
	pnew, err := p.isNew(r.Parent, pi)
	if err != nil {
		return "", p.errorf(ino, "parent %d: %w", r.Parent, err)
	}
	if pnew {
		p.want(r.Parent, modeExists)
		return "", nil
	}
	if taken, err := p.indexTaken(r.Parent, r.Index, ino); err != nil || taken {
		if err != nil {
			return "", p.errorf(ino, "committed index %d in %d: %w", r.Index, r.Parent, err)
		}
		return ReasonIndexReused, nil
	}
	e, err := inode.Lookup(p.ct, r.Parent, r.Name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", p.errorf(ino, "committed name %q in %d: %w", r.Name, r.Parent, err)
	}
	if e.IsSubvol() {
		return ReasonSubvolEntry, nil
	}
	if e.Location.ObjectID == ino {
		return "", nil // the same name with another index: replay relinks it
	}
	// Replay unlinks the other inode's name: fine only when that inode is
	// gone (and was not a directory with committed children).
	_, exists, err := inodeIn(p.t, e.Location.ObjectID)
	if err != nil {
		return "", p.errorf(ino, "inode %d named %q: %w", e.Location.ObjectID, r.Name, err)
	}
	if exists {
		return ReasonNameConflict, nil
	}
	if e.Type == item.FTDir {
		if empty, err := p.committedEmpty(e.Location.ObjectID); err != nil || !empty {
			return ReasonDirRemoved, err
		}
	}
	return "", nil
}

// indexTaken reports whether the last commit has DIR_INDEX index of dir
// for another inode than ino. fsops computes a directory's next index from
// the running tree at its first use in a mount, so a name added after the
// highest one was removed gets that one's index again; a log naming it
// made our replay unlink the committed name (and the kernel's fail with
// EEXIST). A committed name of ino itself at that index is fine: replay
// of ino's refs in dir unlinks the names the log lacks first.
func (p *planner) indexTaken(dir ondisk.ObjectID, index uint64, ino ondisk.ObjectID) (bool, error) {
	data, ok, err := p.ct.Lookup(ondisk.Key{ObjectID: dir, Type: ondisk.DirIndexKey, Offset: index})
	if err != nil || !ok {
		return false, err
	}
	items, err := item.DecodeDirItems(data)
	if err != nil {
		return false, err
	}
	return len(items) != 1 || items[0].Location != inodeKey(ino), nil
}

// committedEmpty reports whether directory dir has no entries in the last
// commit (a removed directory whose name replay may unlink).
func (p *planner) committedEmpty(dir ondisk.ObjectID) (bool, error) {
	empty := true
	err := inode.ReadDir(p.ct, dir, 0, func(inode.DirEntry) bool {
		empty = false
		return false
	}, nil)
	if err != nil {
		return false, p.errorf(dir, "committed entries: %w", err)
	}
	return empty, nil
}

// entries plans a directory logged whole: every inode its entries name
// that is new or renamed into it is logged, and every committed entry that
// is gone must be an inode that is gone (or is logged under its new name).
// The entries are classified index by index (writedirs.go).
func (p *planner) entries(dir ondisk.ObjectID) (string, error) {
	res, err := p.dirPlan(dir)
	if err != nil || res.reason != "" {
		return res.reason, err
	}
	for _, w := range res.wants {
		p.want(w.ino, w.mode)
	}
	pl := p.plan[dir]
	pl.ranges = res.ranges
	if p.rec != nil {
		p.rec.ranges = pl.ranges
	}
	return "", nil
}

// unchangedSpans returns, in order, the index spans of dir's DIR_INDEX
// items that sit in leaves the running transaction did not change
// (generation before transid): those entries are the last commit's, and
// no committed entry lies between the first and last of such a leaf.
func unchangedSpans(t *ctree.Tree, dir ondisk.ObjectID, transid ondisk.Generation) ([]indexRange, error) {
	p, _, err := t.Search(ondisk.Key{ObjectID: dir, Type: ondisk.DirIndexKey})
	if err != nil {
		return nil, err
	}
	var out []indexRange
	for {
		leaf := p.Leaf()
		nr := leaf.NumItems()
		unchanged := leaf.Header().Generation < transid
		first, last, any := uint64(0), uint64(0), false
		i := p.Slots[0]
		for ; i < nr; i++ {
			k := leaf.Key(i)
			if k.ObjectID != dir || k.Type != ondisk.DirIndexKey {
				if k.ObjectID > dir || k.ObjectID == dir && k.Type > ondisk.DirIndexKey {
					break
				}
				continue
			}
			if !any {
				first, any = k.Offset, true
			}
			last = k.Offset
		}
		if any && unchanged {
			out = append(out, indexRange{first, last})
		}
		if i < nr || nr == 0 {
			return out, nil
		}
		p.Slots[0] = nr - 1
		ok, err := p.Next()
		if err != nil || !ok {
			return out, err
		}
	}
}

// complement returns the ranges of [0, 2^64) outside holes (sorted, not
// overlapping once sorted).
func complement(holes []indexRange) []indexRange {
	hs := slices.Clone(holes)
	slices.SortFunc(hs, func(a, b indexRange) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	var out []indexRange
	start, done := uint64(0), false
	for _, h := range hs {
		if h.first > start {
			out = append(out, indexRange{start, h.first - 1})
		}
		if h.last == ^uint64(0) {
			done = true
			break
		}
		start = max(start, h.last+1)
	}
	if !done {
		out = append(out, indexRange{start, ^uint64(0)})
	}
	return out
}

// readIndexes calls fn with dir's entries whose index lies in r.
func readIndexes(t *ctree.Tree, dir ondisk.ObjectID, r indexRange, fn func(inode.DirEntry) bool) error {
	return inode.ReadDir(t, dir, r.first, func(e inode.DirEntry) bool {
		if e.Index > r.last {
			return false
		}
		return fn(e)
	}, nil)
}

// entry says which inode entry e of a logged directory needs logged.
func (p *planner) entry(e inode.DirEntry) (string, wantRec, error) {
	ino := e.Location.ObjectID
	ii, ok, err := inodeIn(p.t, ino)
	if err != nil || !ok {
		return ReasonError, wantRec{}, err
	}
	fresh, err := p.isNew(ino, ii)
	if err != nil {
		return ReasonError, wantRec{}, err
	}
	dir := ii.Mode&item.SIFMT == item.SIFDIR
	if fresh {
		if dir {
			return "", wantRec{ino, modeDir}, nil
		}
		return "", wantRec{ino, modeAll}, nil
	}
	same, err := sameRefs(p.t, p.ct, ino)
	if err != nil {
		return ReasonError, wantRec{}, err
	}
	if !same {
		// renamed or linked into this directory: its refs say so
		if dir {
			return "", wantRec{ino, modeExists}, nil
		}
		return "", wantRec{ino, modeAll}, nil
	}
	return "", wantRec{}, nil
}

// plannedSlab hands out plan entries from chunks kept across fsyncs: a
// plan is made anew on every fsync, and its entries live until the next.
type plannedSlab struct {
	chunks [][]planned
	used   int
}

const slabChunk = 256

func (s *plannedSlab) reset() { s.used = 0 }

func (s *plannedSlab) get() *planned {
	c, i := s.used/slabChunk, s.used%slabChunk
	if c == len(s.chunks) {
		s.chunks = append(s.chunks, make([]planned, slabChunk))
	}
	s.used++
	pl := &s.chunks[c][i]
	*pl = planned{dels: pl.dels[:0]}
	return pl
}

// mapPool keeps one planner's maps per subvolume across fsyncs, cleared
// for each use, so that a plan of many inodes does not grow new maps.
type mapPool struct {
	plans   map[ondisk.ObjectID]map[ondisk.ObjectID]*planned
	targets map[ondisk.ObjectID]map[ondisk.ObjectID]bool
}

func (m *mapPool) take(sub ondisk.ObjectID) map[ondisk.ObjectID]*planned {
	if m.plans == nil {
		m.plans = map[ondisk.ObjectID]map[ondisk.ObjectID]*planned{}
	}
	p := m.plans[sub]
	if p == nil {
		p = map[ondisk.ObjectID]*planned{}
		m.plans[sub] = p
	}
	clear(p)
	return p
}

func (m *mapPool) takeBool(sub ondisk.ObjectID) map[ondisk.ObjectID]bool {
	if m.targets == nil {
		m.targets = map[ondisk.ObjectID]map[ondisk.ObjectID]bool{}
	}
	p := m.targets[sub]
	if p == nil {
		p = map[ondisk.ObjectID]bool{}
		m.targets[sub] = p
	}
	clear(p)
	return p
}
