package treelog

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// Writer writes the log trees of one filesystem: fsync of a regular file
// copies the inode's items (inode item, refs, xattrs, file extents with the
// holes between them, and the checksums of its new data) into its
// subvolume's log tree, writes the log trees and the log root tree, then
// the superblock of the last commit with log_root set; no commit. Every
// inode logged in the running transaction is copied again on each fsync
// (so the log always shows their current committed-or-logged state), and
// the whole log is written to new blocks; the previous log's blocks are
// freed once the new superblock is on disk. Cases this writer does not log
// fall back to a full commit and are counted (Stats.Commits).
// mirrors btrfs_sync_file / btrfs_log_inode (the LOG_INODE_ALL, full sync path)
type Writer struct {
	mu sync.Mutex
	f  *txn.Engine

	nodesize int
	ss       uint64
	noHoles  bool
	csumSize int

	buf     scratch
	cur     extentCursor
	transid ondisk.Generation // transaction of the current log
	logged  []ondisk.InodeRef // inodes in the log, sorted
	stores  map[ondisk.InodeRef]*inodeLog
	blocks  []ondisk.LogicalAddr // blocks of the log on disk
	nodes   []*diskio.Node       // block buffers, reused
	order   []wRef               // build scratch, reused

	stats Stats
}

// NewWriter returns the log writer of f.
func NewWriter(f *txn.Engine) *Writer {
	sb := f.Info.Super
	return &Writer{f: f, nodesize: int(sb.NodeSize), ss: uint64(sb.SectorSize),
		noHoles: sb.IncompatFlags&ondisk.IncompatNoHoles != 0, csumSize: f.Info.Csum.Size(),
		stores: map[ondisk.InodeRef]*inodeLog{}}
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
		w.transid, w.logged, w.blocks = t, w.logged[:0], w.blocks[:0]
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
	if err := w.f.FreeLogBlocks(w.blocks); err != nil {
		return err
	}
	w.blocks = append(w.blocks[:0], addrsOf(nodes)...)
	w.stats.mu.Lock()
	w.stats.Logged++
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

// logAll copies id and every inode logged before in this transaction into
// their stores. A non-empty reason says why the log cannot be used.
func (w *Writer) logAll(h *txn.Handle, id ondisk.InodeRef) (string, error) {
	i := sort.Search(len(w.logged), func(i int) bool { return !lessID(w.logged[i], id) })
	fresh := i == len(w.logged) || w.logged[i] != id
	reason, changed, err := w.check(h, id)
	if err != nil || reason != "" {
		return reason, err
	}
	if !changed && fresh {
		return ReasonClean, nil
	}
	if h.NewChunkPending() {
		return ReasonNewChunk, nil
	}
	if fresh {
		w.logged = append(w.logged, ondisk.InodeRef{})
		copy(w.logged[i+1:], w.logged[i:])
		w.logged[i] = id
	}
	for _, o := range w.logged {
		if o != id {
			if reason, _, err := w.check(h, o); err != nil || reason != "" {
				if reason != "" {
					reason = ReasonLoggedChanged
				}
				return reason, err
			}
		}
		if err := w.copyInode(h, o); err != nil {
			return "", err
		}
	}
	return "", nil
}

func lessID(a, b ondisk.InodeRef) bool {
	return a.Root < b.Root || a.Root == b.Root && a.Ino < b.Ino
}

// check decides whether id can be logged: a regular file that exists in
// the last commit with the same names (INODE_REF/EXTREF items). changed
// reports whether its inode item changed in the running transaction.
// mirrors the btrfs_inode_in_log / need_log_inode / last_unlink_trans checks,
// simplified: every name change falls back to a commit
func (w *Writer) check(h *txn.Handle, id ondisk.InodeRef) (reason string, changed bool, err error) {
	t, err := h.Tree(id.Root)
	if err != nil {
		return "", false, err
	}
	data, ok, err := t.Lookup(ondisk.Key{ObjectID: id.Ino, Type: ondisk.InodeItemKey})
	if err != nil {
		return "", false, fmt.Errorf("log inode %d of subvolume %d: %w", id.Ino, id.Root, err)
	}
	if !ok {
		return ReasonDeleted, false, nil
	}
	ii, err := item.DecodeInodeItem(data)
	if err != nil {
		return "", false, fmt.Errorf("log inode %d of subvolume %d: %w", id.Ino, id.Root, err)
	}
	switch ii.Mode & item.SIFMT {
	case item.SIFREG:
	case item.SIFDIR:
		return ReasonDir, false, nil
	default:
		return ReasonNotRegular, false, nil
	}
	changed = ondisk.Generation(ii.Transid) == h.Transid()
	ct, err := committedTree(h, w.f, id.Root)
	if err != nil {
		return "", false, err
	}
	if ct == nil {
		return ReasonNewSubvol, false, nil
	}
	if ii.Generation == uint64(h.Transid()) {
		return ReasonNewInode, false, nil
	}
	if _, ok, err := ct.Lookup(ondisk.Key{ObjectID: id.Ino, Type: ondisk.InodeItemKey}); err != nil || !ok {
		if err != nil {
			return "", false, fmt.Errorf("log inode %d: read committed subvolume %d: %w", id.Ino, id.Root, err)
		}
		return ReasonNewInode, false, nil
	}
	same, err := sameRefs(t, ct, id.Ino)
	if err != nil {
		return "", false, fmt.Errorf("log inode %d of subvolume %d: compare names: %w", id.Ino, id.Root, err)
	}
	if !same {
		return ReasonNames, false, nil
	}
	return "", changed, nil
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
func (w *Writer) copyInode(h *txn.Handle, id ondisk.InodeRef) error {
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
	w.cur.reset()
	w.cur.noHoles, w.cur.ss, w.cur.transid = w.noHoles, w.ss, h.Transid()
	if err := w.copyItems(t, l); err != nil {
		return fmt.Errorf("log inode %d of subvolume %d: %w", id.Ino, id.Root, err)
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
