package txn

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Committed views. The trees of the last commit on disk stay intact until
// the next commit is on disk: every block they use that a later
// transaction frees is pinned until then (what crash consistency needs
// anyway), and in memory a COW copies a block, never changes a committed
// one. So a reader that needs only what that commit holds can read its
// trees without the transaction lock, while a commit settles or a handle
// runs. A View pins that state: the commit that would unpin its blocks
// (writeCommit's last step) first waits for the views open on it, and the
// next view is published at that moment, under the same lock.
//
// No view exists before the first commit of this open: a log replay at
// open changes the running transaction, not the superblock read.

// views is the Engine's committed-view state.
type views struct {
	mu   sync.RWMutex                  // read: a View is open; write: its blocks are unpinned
	last atomic.Pointer[committedRoot] // the last commit on disk; nil before the first
}

// committedRoot is where a view's trees start: the root tree of a commit.
type committedRoot struct {
	gen   ondisk.Generation
	root  ondisk.LogicalAddr
	level int
}

// View reads the trees of the last commit on disk. It is not safe for
// concurrent use; Done must follow.
type View struct {
	f        *Engine
	gen      ondisk.Generation
	rootTree *ctree.Tree
}

// View opens a view of the last commit on disk, or returns nil when there
// is none (no commit since open, or the filesystem is aborted or closed).
func (f *Engine) View() *View {
	f.views.mu.RLock()
	c := f.views.last.Load()
	if c == nil || f.usable() != nil {
		f.views.mu.RUnlock()
		return nil
	}
	return &View{f: f, gen: c.gen, rootTree: &ctree.Tree{R: f.Info.R, ID: ondisk.RootTreeObjectID,
		Root: c.root, Level: c.level, Gen: c.gen}}
}

// Generation is the commit the view shows.
func (v *View) Generation() ondisk.Generation { return v.gen }

// Done closes the view; its trees must not be read after.
func (v *View) Done() { v.f.views.mu.RUnlock() }

// Tree opens tree id as the view's commit left it: a subvolume or the
// csum tree (the root, chunk and log trees are not offered). A tree being
// deleted, or one the commit did not have, is an error wrapping
// fsinfo.ErrNoTree.
func (v *View) Tree(id ondisk.ObjectID) (*ctree.Tree, error) {
	switch id {
	case ondisk.RootTreeObjectID, ondisk.ChunkTreeObjectID, ondisk.TreeLogObjectID:
		return nil, fmt.Errorf("view of commit %d: tree %s is not offered: %w", v.gen, ondisk.TreeName(id), fsinfo.ErrNoTree)
	}
	p, ok, err := v.rootTree.SearchBackward(ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey, Offset: ^uint64(0)})
	if err != nil {
		return nil, fmt.Errorf("view of commit %d: root item of tree %s: %w", v.gen, ondisk.TreeName(id), err)
	}
	if !ok || p.Key().ObjectID != id || p.Key().Type != ondisk.RootItemKey {
		return nil, fmt.Errorf("view of commit %d: tree %s: %w", v.gen, ondisk.TreeName(id), fsinfo.ErrNoTree)
	}
	ri, err := item.DecodeRootItem(p.Data())
	if err != nil {
		return nil, fmt.Errorf("view of commit %d: root item %v: %w", v.gen, p.Key(), err)
	}
	if ri.Flags&item.RootSubvolDead != 0 || ri.Refs == 0 && id != ondisk.CsumTreeObjectID {
		return nil, fmt.Errorf("view of commit %d: tree %s is being deleted: %w", v.gen, ondisk.TreeName(id), fsinfo.ErrNoTree)
	}
	return &ctree.Tree{R: v.f.Info.R, ID: id, Root: ri.Bytenr, Level: int(ri.Level), Gen: ri.Generation}, nil
}

// publishView makes sb's commit, now on disk, the one views show, and runs
// unpin (which frees what the previous commit's trees may still use) once
// no view of the previous commit is open.
func (f *Engine) publishView(sb *ondisk.Superblock, unpin func()) {
	f.views.mu.Lock()
	defer f.views.mu.Unlock()
	f.views.last.Store(&committedRoot{gen: sb.Generation, root: sb.Root, level: int(sb.RootLevel)})
	unpin()
}

// TryBegin is Begin when the transaction lock is free at once; ok is false
// (and h nil) when a handle or a commit holds it.
func (f *Engine) TryBegin() (h *Handle, ok bool, err error) {
	if !f.mu.TryLock() {
		return nil, false, nil
	}
	if err := f.usable(); err != nil {
		f.mu.Unlock()
		return nil, false, err
	}
	return &Handle{f: f}, true, nil
}
