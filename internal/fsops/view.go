package fsops

import (
	"sync"
	"sync/atomic"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Reads from the last commit. A READ that finds the transaction lock taken
// (a commit settling, a writeback, any handle) is served from the trees of
// the last commit on disk (txn.View) when that commit already holds
// everything about the inode: no transaction since changed it. The data
// is read by the same engine, checksums verified against the view's csum
// tree; anything the view cannot answer, and any error, sends the read to
// the running transaction, which waits for the lock as before.

// changeLog records, per inode, the last transaction that changed its
// items (touched, beside the log tree's note); entries the last commit
// covers are pruned as they are met, so it holds about the inodes changed
// since.
type changeLog struct {
	mu   sync.Mutex
	last map[ondisk.InodeRef]ondisk.Generation

	viewReads atomic.Uint64 // reads served from a view
}

// touched notes that o changes inode id: for the log tree (treelog's
// watch) and for reads from the last commit.
func (o *op) touched(id ondisk.InodeRef) {
	o.f.logWriter().Touched(id)
	c := &o.f.changes
	c.mu.Lock()
	if c.last == nil {
		c.last = map[ondisk.InodeRef]ondisk.Generation{}
	}
	c.last[id] = ondisk.Generation(o.transid)
	c.mu.Unlock()
}

// committed reports whether commit gen holds every change of id.
func (c *changeLog) committed(id ondisk.InodeRef, gen ondisk.Generation) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.last[id]
	if ok && t <= gen {
		delete(c.last, id) // on disk now: no later view needs the entry
		ok = false
	}
	return !ok
}

// readInode runs fn, which only reads inode id, as a view of the running
// transaction when its lock is free, from the last commit when the lock is
// taken and that commit holds all of id, else as a view once the lock is
// free.
func (f *FS) readInode(id ondisk.InodeRef, fn func(o *op) error) error {
	h, ok, err := f.tx.TryBegin()
	switch {
	case err != nil:
	case ok:
		err = fn(&op{f: f, h: h, a: h.Alloc(), transid: uint64(h.Transid())})
		h.End()
	case f.readCommitted(id, fn):
	default:
		err = f.view(fn)
	}
	return err
}

// readCommitted runs fn, a read of inode id, on the last commit's trees
// when that commit holds all of id; false when it cannot (no view yet, id
// changed since, a tree the commit lacks, or fn failed: the caller then
// reads through the running transaction).
func (f *FS) readCommitted(id ondisk.InodeRef, fn func(o *op) error) bool {
	v := f.tx.View()
	if v == nil {
		return false
	}
	defer v.Done()
	if !f.changes.committed(id, v.Generation()) {
		return false
	}
	trees := map[ondisk.ObjectID]*ctree.Tree{}
	for _, tid := range []ondisk.ObjectID{id.Root, ondisk.CsumTreeObjectID} {
		t, err := v.Tree(tid)
		if err != nil {
			return false
		}
		trees[tid] = t
	}
	// no handle: o.tree hands out these two trees only, and a read asks
	// for no other
	if fn(&op{f: f, trees: trees}) != nil {
		return false
	}
	f.changes.viewReads.Add(1)
	return true
}

// ViewReads is how many reads were served from the last commit because the
// transaction lock was taken.
func (f *FS) ViewReads() uint64 { return f.changes.viewReads.Load() }
