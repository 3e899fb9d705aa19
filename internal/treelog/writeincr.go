package treelog

import (
	"fmt"
	"slices"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// The plan of the last fsync is kept for the rest of the transaction: the
// next fsync visits only the inodes of the plan that changed since
// (Touched: every change of an inode writes its inode item) and the inode
// fsync'd, on top of it. What an unchanged inode adds to the plan is what
// it added last time (its memo), so the plan is the same as one made
// anew, as long as each inode visited again still wants at least what it
// wanted (an inode that wants less, say renamed away from a new
// directory, makes the fsync plan anew). Only the plan entries made or
// changed are copied again. An fsync then costs the inodes it changed,
// not every inode fsync'd in the transaction. mirrors the kernel's log
// trees, which keep what earlier fsyncs of the transaction logged
// (btrfs_inode_in_log, need_log_inode)

// planKept plans the fsync of id on top of the kept plan and copies what
// changed. done is false when the plan must be made anew (planAll).
func (w *Writer) planKept(h *txn.Handle, id ondisk.InodeRef) (done bool, reason string, err error) {
	plans := map[ondisk.ObjectID]*planner{}
	get := func(sub ondisk.ObjectID) (*planner, string, error) {
		if p := plans[sub]; p != nil {
			return p, "", nil
		}
		p, reason, err := newPlanner(h, w.f, sub)
		if p == nil || reason != "" || err != nil {
			return nil, reason, err
		}
		if old := w.kept[sub]; old != nil {
			p.plan, p.targets = old.plan, old.targets
		} else {
			p.plan, p.targets = w.planMaps.take(sub), w.targetMaps.takeBool(sub)
		}
		p.memo, p.watch, p.fsynced, p.slab, p.dirs, p.seq = w.memo, &w.watch, id, &w.slab, &w.dirs, w.seq
		p.changed = map[ondisk.ObjectID]bool{}
		plans[sub] = p
		return p, "", nil
	}
	again := append(slices.Clone(w.dropped), id)
	seen := make(map[ondisk.InodeRef]bool, len(again))
	for _, x := range again {
		pl := w.plan[x]
		if seen[x] || pl == nil && x != id {
			continue // visited already, or not in the plan
		}
		seen[x] = true
		p, reason, err := get(x.Root)
		if err != nil {
			return true, "", err
		}
		if p == nil || reason != "" {
			return false, "", nil // the plan made anew says why
		}
		var old *visitMemo
		if m := p.memo[x]; m != nil && m.transid == h.Transid() {
			old = m
		}
		if x == id {
			p.targets[x.Ino] = true
		}
		if pl == nil {
			p.want(x.Ino, modeAll)
		} else {
			p.queue = append(p.queue, x.Ino)
		}
		reason, err = p.run()
		if err != nil {
			return true, "", err
		}
		if reason != "" || pl != nil && (old == nil || !extends(p.memo[x], old)) {
			return false, "", nil
		}
	}
	if w.dirty == nil {
		w.dirty = map[ondisk.InodeRef]bool{}
	}
	clear(w.dirty)
	for sub, p := range plans {
		for ino := range p.changed {
			o := ondisk.InodeRef{Root: sub, Ino: ino}
			w.dirty[o] = true
			if _, ok := w.plan[o]; !ok {
				w.plan[o] = p.plan[ino]
				i := sort.Search(len(w.logged), func(i int) bool { return !lessID(w.logged[i], o) })
				w.logged = slices.Insert(w.logged, i, o)
			}
		}
		w.kept[sub] = p
	}
	for o := range w.dirty {
		if o != id {
			same, err := w.unchanged(h, o, w.plan[o])
			if err != nil {
				return true, "", err
			}
			if same {
				continue
			}
		}
		if err := w.copyInode(h, o, w.plan[o]); err != nil {
			return true, "", err
		}
	}
	if verifyKept {
		if err := w.verifyPlan(h, id); err != nil {
			keptMismatch = append(keptMismatch, err)
			return true, "", err
		}
	}
	return true, "", nil
}

// extends reports whether visit memo m adds to the plan at least what old
// added.
func extends(m, old *visitMemo) bool {
	if m == nil || m.mode != old.mode || m.dir != old.dir {
		return false
	}
	for _, x := range old.wants {
		if !slices.Contains(m.wants, x) {
			return false
		}
	}
	for _, x := range old.dels {
		if !slices.Contains(m.dels, x) {
			return false
		}
	}
	return true
}

// verifyPlan (tests) checks the kept plan and the stores against a plan
// made anew from the trees alone.
func (w *Writer) verifyPlan(h *txn.Handle, id ondisk.InodeRef) error {
	var slab plannedSlab
	plans := map[ondisk.ObjectID]*planner{}
	for _, o := range w.targets {
		p := plans[o.Root]
		if p == nil {
			var reason string
			var err error
			p, reason, err = newPlanner(h, w.f, o.Root)
			if err != nil || reason != "" {
				return fmt.Errorf("kept plan of %v: a new plan: %q %w", id, reason, err)
			}
			p.plan, p.targets, p.slab, p.fsynced = map[ondisk.ObjectID]*planned{}, map[ondisk.ObjectID]bool{}, &slab, id
			plans[o.Root] = p
		}
		p.targets[o.Ino] = true
		p.want(o.Ino, modeAll)
		if reason, err := p.run(); err != nil || reason != "" {
			return fmt.Errorf("kept plan of %v: a new plan: %q %w", id, reason, err)
		}
	}
	n := 0
	for sub, p := range plans {
		for ino, f := range p.plan {
			n++
			o := ondisk.InodeRef{Root: sub, Ino: ino}
			k := w.plan[o]
			if k == nil {
				return fmt.Errorf("kept plan of %v lacks %v (%s)", id, o, f)
			}
			if k.mode != f.mode || k.dir != f.dir || !slices.Equal(k.ranges, f.ranges) || !slices.Equal(sortedSet(k.dels), sortedSet(f.dels)) {
				return fmt.Errorf("kept plan of %v: %v is %s, a new plan has %s", id, o, k, f)
			}
		}
	}
	if n != len(w.plan) || n != len(w.logged) {
		return fmt.Errorf("kept plan of %v holds %d inodes (%d listed), a new plan %d", id, len(w.plan), len(w.logged), n)
	}
	for _, o := range w.logged {
		pl := w.plan[o]
		seq := pl.seq
		pl.seq = 0 // read the inode item again
		same, err := w.unchanged(h, o, pl)
		pl.seq = seq
		if err != nil || !same {
			return fmt.Errorf("kept plan of %v: the store of %v is not current (%v)", id, o, err)
		}
	}
	return nil
}

func sortedSet(xs []uint64) []uint64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return slices.Compact(s)
}

func (pl *planned) String() string {
	return fmt.Sprintf("mode %d dir %v dels %v ranges %v", pl.mode, pl.dir, sortedSet(pl.dels), pl.ranges)
}
