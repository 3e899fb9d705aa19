package treelog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// Writer writes the log trees of one filesystem. An fsync plans which
// inodes the log must hold (planner: the fsync'd inodes of the running
// transaction, their new ancestor directories, the old parents of renamed
// ones with deletion ranges, and for a directory fsync every new child),
// copies their items (inode item, refs, xattrs, file extents with the holes
// between them and the checksums of new data; DIR_INDEX items and
// DIR_LOG_INDEX ranges for directories) into per-inode stores, writes the
// log trees and the log root tree to new blocks, then the superblock of the
// last commit with log_root set; no commit. Each fsync writes the whole log
// of the transaction (so it always shows the current state of every
// fsync'd inode), but costs what changed: the plan is kept and extended
// (writeincr.go), a directory's entries are classified again only where
// they changed (writedirs.go), only changed inodes are copied, and leaves
// of the log on disk holding the same items are used again (writeleaves.go);
// the previous log's blocks it no longer uses are freed once the new
// superblock is on disk. What the log cannot express falls back to a full
// commit, counted by reason (Stats.Commits).
// mirrors btrfs_sync_file / btrfs_log_inode_parent
type Writer struct {
	mu sync.Mutex
	f  *txn.Engine

	nodesize int
	ss       uint64
	noHoles  bool
	csumSize int

	buf        scratch
	cur        extentCursor
	transid    ondisk.Generation              // transaction of the current log
	targets    []ondisk.InodeRef              // inodes fsync'd in the running transaction, sorted
	logged     []ondisk.InodeRef              // inodes in the log (the targets' plan), sorted
	plan       map[ondisk.InodeRef]*planned   // what of each logged inode is copied
	memo       map[ondisk.InodeRef]*visitMemo // the planner's memory of this transaction
	watch      watchSet                       // memos no change has touched since (Touched)
	dirs       dirCache                       // directories logged whole in this transaction (writedirs.go)
	slab       plannedSlab                    // plan entries, reused by every fsync
	planMaps   mapPool                        // the planners' maps, reused by every fsync
	targetMaps mapPool
	stores     map[ondisk.InodeRef]*inodeLog
	disk       diskBlocks                      // blocks of the log on disk, by content
	reused     []ondisk.LogicalAddr            // blocks of the log on disk the build uses again
	reusedSet  map[ondisk.LogicalAddr]bool     // the same, as a set: each is used once
	nodes      []*diskio.Node                  // block buffers, reused
	order      []wRef                          // build scratch, reused
	leaves     map[ondisk.ObjectID][]builtLeaf // each log tree's leaves on disk (writeleaves.go)
	built      map[ondisk.ObjectID][]builtLeaf // the same, of the log being built
	version    uint64                          // the last store version given (inodeLog.ver)
	seq        uint64                          // fsyncs planned (planned.seq)
	kept       map[ondisk.ObjectID]*planner    // the last fsync's planners, whose plan is kept (writeincr.go)
	dropped    []ondisk.InodeRef               // planned inodes touched since (Touched)
	dirty      map[ondisk.InodeRef]bool        // plan entries this fsync made or changed (kept plan)

	stats Stats
}

// NewWriter returns the log writer of f.
func NewWriter(f *txn.Engine) *Writer {
	sb := f.Info.Super
	return &Writer{f: f, nodesize: int(sb.NodeSize), ss: uint64(sb.SectorSize),
		noHoles: sb.IncompatFlags&ondisk.IncompatNoHoles != 0, csumSize: f.Info.Csum.Size(),
		stores: map[ondisk.InodeRef]*inodeLog{}, plan: map[ondisk.InodeRef]*planned{}, memo: map[ondisk.InodeRef]*visitMemo{}}
}

// Fsync makes inode id durable: through the log when it can, else by
// calling commit. The caller has written the inode's dirty data back.
func (w *Writer) Fsync(id ondisk.InodeRef, commit func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	// Seed 000: the scratch leaf exists before the handle (our tree lock).
	w.buf.prepare(w.nodesize)
	h, err := w.f.Begin()
	if err != nil {
		return err
	}
	if t := h.Transid(); t != w.transid {
		// The previous log died with its commit.
		w.transid, w.targets, w.logged = t, w.targets[:0], w.logged[:0]
		w.disk.reset()
		w.leaves = nil
		clear(w.memo)
		w.watch.reset()
		w.dirs.reset()
		w.kept, w.dropped = nil, w.dropped[:0]
		if len(w.stores) > 4*maxTargets {
			clear(w.stores)
		}
	}
	reason, err := w.logAll(h, id)
	if err != nil || reason != "" {
		h.End()
		if err != nil {
			reason = ReasonError
		}
		w.count(reason)
		if reason == ReasonClean {
			// Nothing to log; data rewritten in place (NOCOW) still
			// needs the device cache flushed.
			return w.f.Info.Dev.Flush()
		}
		return commit()
	}
	nodes, root, level, err := w.build(h)
	if err != nil {
		h.End()
		w.f.FreeLogBlocks(addrsOf(nodes))
		w.count(ReasonLogSpace)
		return commit()
	}
	transid := h.Transid()
	h.End()
	// Written without the handle: writers go on while the log is flushed.
	err = w.f.SyncLog(transid, nodes, root, level)
	if errors.Is(err, txn.ErrLogStale) {
		w.count(ReasonCommitted)
		return nil
	}
	if err != nil {
		w.f.FreeLogBlocks(addrsOf(nodes))
		w.count(ReasonLogIO)
		return commit()
	}
	w.leaves, w.built = w.built, nil
	if err := w.f.FreeLogBlocks(w.disk.replace(nodes, w.reused)); err != nil {
		return err
	}
	w.stats.mu.Lock()
	w.stats.Logged++
	w.stats.Written += uint64(len(nodes))
	w.stats.Reused += uint64(len(w.reused))
	w.stats.LastWritten, w.stats.LastBlocks = len(nodes), len(nodes)+len(w.reused)
	w.stats.mu.Unlock()
	return nil
}

func addrsOf(ns []*diskio.Node) []ondisk.LogicalAddr {
	out := make([]ondisk.LogicalAddr, len(ns))
	for i, n := range ns {
		out[i] = n.Addr
	}
	return out
}

// maxTargets bounds the inodes fsync'd in one transaction's log: every
// fsync rewrites the whole log, so its cost grows with them; past this many
// a commit starts a new, empty log.
var maxTargets = 256

// logAll plans the log for the transaction's fsync targets (id and every
// inode fsync'd before in this transaction) and copies the planned inodes
// into their stores. A non-empty reason says why the log cannot be used.
func (w *Writer) logAll(h *txn.Handle, id ondisk.InodeRef) (string, error) {
	i := sort.Search(len(w.targets), func(i int) bool { return !lessID(w.targets[i], id) })
	fresh := i == len(w.targets) || w.targets[i] != id
	if fresh {
		changed, err := w.changed(h, id)
		if err != nil {
			return "", err
		}
		if !changed {
			return ReasonClean, nil
		}
	}
	if h.NewChunkPending() {
		return ReasonNewChunk, nil
	}
	if fresh && len(w.targets) >= maxTargets {
		return ReasonLogFull, nil
	}
	if fresh {
		w.targets = slices.Insert(w.targets, i, id)
	}
	w.seq++
	if w.kept != nil {
		done, reason, err := w.planKept(h, id)
		if err != nil || done {
			w.dropped = w.dropped[:0]
			if err != nil || reason != "" {
				w.kept = nil
			}
			return reason, err
		}
	}
	reason, err := w.planAll(h, id)
	w.dropped = w.dropped[:0]
	if err != nil || reason != "" {
		w.kept = nil
		return reason, err
	}
	return "", w.copyAll(h, id)
}

// planAll plans the log anew for every fsync target of the transaction.
func (w *Writer) planAll(h *txn.Handle, id ondisk.InodeRef) (string, error) {
	w.kept = nil
	plans := map[ondisk.ObjectID]*planner{}
	w.slab.reset()
	planOf := func(sub ondisk.ObjectID) (*planner, string, error) {
		if p := plans[sub]; p != nil {
			return p, "", nil
		}
		p, reason, err := newPlanner(h, w.f, sub)
		if p != nil {
			p.plan, p.targets = w.planMaps.take(sub), w.targetMaps.takeBool(sub)
			p.memo, p.watch, p.fsynced, p.slab, p.dirs, p.seq = w.memo, &w.watch, id, &w.slab, &w.dirs, w.seq
			plans[sub] = p
		}
		return p, reason, err
	}
	// The fsync'd inode first, so that its own reason is the one counted.
	for pass := 0; pass < 2; pass++ {
		for _, o := range w.targets {
			if (pass == 0) != (o == id) {
				continue
			}
			p, reason, err := planOf(o.Root)
			if err == nil && reason == "" {
				p.targets[o.Ino] = true
				p.want(o.Ino, modeAll)
				reason, err = p.run()
			}
			if err != nil || reason != "" {
				if pass == 1 && reason != "" {
					reason = ReasonLoggedChanged
				}
				return reason, err
			}
		}
	}
	w.logged = w.logged[:0]
	clear(w.plan)
	for sub, p := range plans {
		for ino, pl := range p.plan {
			o := ondisk.InodeRef{Root: sub, Ino: ino}
			w.logged = append(w.logged, o)
			w.plan[o] = pl
		}
	}
	slices.SortFunc(w.logged, func(a, b ondisk.InodeRef) int {
		if lessID(a, b) {
			return -1
		}
		if a == b {
			return 0
		}
		return 1
	})
	w.kept = plans
	return "", nil
}

// copyAll copies every logged inode whose store is not current.
func (w *Writer) copyAll(h *txn.Handle, id ondisk.InodeRef) error {
	for _, o := range w.logged {
		if o != id {
			same, err := w.unchanged(h, o, w.plan[o])
			if err != nil {
				return err
			}
			if same {
				continue
			}
		}
		if err := w.copyInode(h, o, w.plan[o]); err != nil {
			return err
		}
	}
	return nil
}

// unchanged reports whether o's store already holds what copyInode would
// copy: copied in this transaction with the same plan, and its inode item
// is byte for byte the one copied. Every change of an inode's items
// changes its inode item too (ctime, sequence, size...: fsops touches it).
// The fsync'd inode itself is always copied again.
func (w *Writer) unchanged(h *txn.Handle, o ondisk.InodeRef, pl *planned) (bool, error) {
	l := w.stores[o]
	if l == nil || l.transid != h.Transid() || l.mode != pl.mode || len(l.items) == 0 ||
		l.items[0].key.Type != ondisk.InodeItemKey || !slices.Equal(l.dels, pl.dels) || !slices.Equal(l.ranges, pl.ranges) {
		return false, nil
	}
	if pl.item != nil && pl.seq == w.seq {
		return bytes.Equal(pl.item, l.data(l.items[0])), nil // as the planner read it
	}
	t, err := h.Tree(o.Root)
	if err != nil {
		return false, err
	}
	data, ok, err := t.Lookup(ondisk.Key{ObjectID: o.Ino, Type: ondisk.InodeItemKey})
	if err != nil {
		return false, fmt.Errorf("log inode %d of subvolume %d: %w", o.Ino, o.Root, err)
	}
	return ok && bytes.Equal(data, l.data(l.items[0])), nil
}

func lessID(a, b ondisk.InodeRef) bool {
	return a.Root < b.Root || a.Root == b.Root && a.Ino < b.Ino
}

// changed reports whether id (not yet fsync'd in this transaction) needs
// logging: its inode item or its names changed since the last commit.
func (w *Writer) changed(h *txn.Handle, id ondisk.InodeRef) (bool, error) {
	t, err := h.Tree(id.Root)
	if err != nil {
		return false, err
	}
	data, ok, err := t.Lookup(ondisk.Key{ObjectID: id.Ino, Type: ondisk.InodeItemKey})
	if err != nil {
		return false, fmt.Errorf("log inode %d of subvolume %d: %w", id.Ino, id.Root, err)
	}
	if !ok {
		return true, nil // the planner says why it cannot be logged
	}
	ii, err := item.DecodeInodeItem(data)
	if err != nil {
		return false, fmt.Errorf("log inode %d of subvolume %d: %w", id.Ino, id.Root, err)
	}
	if ondisk.Generation(ii.Transid) == h.Transid() || ondisk.Generation(ii.Generation) == h.Transid() {
		return true, nil
	}
	ct, err := committedTree(h, w.f, id.Root)
	if err != nil || ct == nil {
		return true, err
	}
	if _, ok, err := ct.Lookup(ondisk.Key{ObjectID: id.Ino, Type: ondisk.InodeItemKey}); err != nil || !ok {
		return true, err
	}
	same, err := sameRefs(t, ct, id.Ino)
	if err != nil {
		return false, fmt.Errorf("log inode %d of subvolume %d: compare names: %w", id.Ino, id.Root, err)
	}
	return !same, nil
}

// committedTree returns subvolume id as the last commit left it, or nil
// when the last commit has no such subvolume.
func committedTree(h *txn.Handle, f *txn.Engine, id ondisk.ObjectID) (*ctree.Tree, error) {
	sb := h.CommittedSuper()
	rt := &ctree.Tree{R: f.Info.R, ID: ondisk.RootTreeObjectID, Root: sb.Root, Level: int(sb.RootLevel)}
	p, ok, err := rt.SearchForward(ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey})
	if err != nil {
		return nil, fmt.Errorf("read committed root tree: %w", err)
	}
	if !ok || p.Key().ObjectID != id || p.Key().Type != ondisk.RootItemKey {
		return nil, nil
	}
	ri, err := item.DecodeRootItem(p.Data())
	if err != nil {
		return nil, fmt.Errorf("committed root item of subvolume %d: %w", id, err)
	}
	return &ctree.Tree{R: f.Info.R, ID: id, Root: ri.Bytenr, Level: int(ri.Level), Gen: ri.Generation}, nil
}

// sameRefs reports whether ino has the same INODE_REF and INODE_EXTREF
// items in trees a and b.
func sameRefs(a, b *ctree.Tree, ino ondisk.ObjectID) (bool, error) {
	lo := ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey}
	hi := ondisk.Key{ObjectID: ino, Type: ondisk.InodeExtrefKey, Offset: ^uint64(0)}
	var ra, rb []byte
	collect := func(t *ctree.Tree, out *[]byte) error {
		return t.Range(lo, hi, func(k ondisk.Key, d []byte) bool {
			var kb [17]byte
			k.Encode(kb[:])
			*out = append(append(*out, kb[:]...), d...)
			return true
		})
	}
	if err := collect(a, &ra); err != nil {
		return false, err
	}
	if err := collect(b, &rb); err != nil {
		return false, err
	}
	return bytes.Equal(ra, rb), nil
}

// copyInode copies id's items from the running subvolume tree into its
// store, with the checksums of its new data extents.
func (w *Writer) copyInode(h *txn.Handle, id ondisk.InodeRef, pl *planned) error {
	t, err := h.Tree(id.Root)
	if err != nil {
		return err
	}
	l := w.stores[id]
	if l == nil {
		l = &inodeLog{id: id}
		w.stores[id] = l
	}
	l.reset()
	w.version++
	l.ver = w.version
	l.mode, l.ranges, l.transid = pl.mode, append(l.ranges[:0], pl.ranges...), h.Transid()
	l.dels = append(l.dels[:0], pl.dels...)
	w.cur.reset()
	w.cur.noHoles, w.cur.ss, w.cur.transid = w.noHoles, w.ss, h.Transid()
	if err := w.copyItems(t, l); err != nil {
		return fmt.Errorf("log inode %d of subvolume %d: %w", id.Ino, id.Root, err)
	}
	if pl.dir {
		l.addDirRanges(pl)
		return nil
	}
	if pl.mode < modeAll {
		return nil
	}
	w.cur.finish(l)
	cs, err := h.Tree(ondisk.CsumTreeObjectID)
	if err != nil {
		return err
	}
	for _, r := range w.cur.news {
		if err := w.copyCsums(cs, l, r); err != nil {
			return fmt.Errorf("log inode %d of subvolume %d: checksums of %d+%d: %w", id.Ino, id.Root, uint64(r.start), r.n, err)
		}
	}
	return nil
}

// copyItems walks ino's items leaf by leaf, cloning each leaf.
func (w *Writer) copyItems(t *ctree.Tree, l *inodeLog) error {
	p, _, err := t.Search(ondisk.Key{ObjectID: l.id.Ino})
	if err != nil {
		return err
	}
	for {
		leaf := p.Leaf()
		if !w.buf.copyLeafItems(leaf, p.Slots[0], l, &w.cur) {
			return nil
		}
		// Move to the first item of the next leaf.
		p.Slots[0] = leaf.NumItems() - 1
		if leaf.NumItems() == 0 {
			return nil
		}
		ok, err := p.Next()
		if err != nil || !ok {
			return err
		}
	}
}

// copyCsums copies the checksums of data extent r from the csum tree.
func (w *Writer) copyCsums(cs *ctree.Tree, l *inodeLog, r diskRange) error {
	end := r.start + ondisk.LogicalAddr(r.n)
	key := ondisk.Key{ObjectID: ondisk.ExtentCsumObjectID, Type: ondisk.ExtentCsumKey, Offset: uint64(r.start)}
	p, ok, err := cs.SearchBackward(key)
	if err == nil && !ok {
		p, ok, err = cs.SearchForward(key)
	}
	if err != nil || !ok {
		return err
	}
	maxSums := (w.nodesize - ondisk.HeaderSize - ondisk.ItemHeaderSize) / 2 / w.csumSize
	for ok := p.Valid(); ok; ok, err = p.Next() {
		k := p.Key()
		if k.ObjectID != ondisk.ExtentCsumObjectID || k.Type != ondisk.ExtentCsumKey {
			if k.ObjectID > ondisk.ExtentCsumObjectID {
				return nil
			}
			continue
		}
		start := ondisk.LogicalAddr(k.Offset)
		if start >= end {
			return nil
		}
		d := p.Data()
		iend := start + ondisk.LogicalAddr(uint64(len(d)/w.csumSize)*w.ss)
		lo, hi := max(start, r.start), min(iend, end)
		for lo < hi {
			n := min(int(uint64(hi-lo)/w.ss), maxSums)
			i := int(uint64(lo-start) / w.ss)
			l.addCsum(lo, d[i*w.csumSize:(i+n)*w.csumSize])
			lo += ondisk.LogicalAddr(uint64(n) * w.ss)
		}
	}
	return err
}
