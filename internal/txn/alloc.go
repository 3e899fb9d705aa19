package txn

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// allocator is the ctree.Allocator of the running transaction. Its methods
// run under f.mu (held by the handle or the commit).
type allocator struct{ f *Engine }

var _ ctree.Allocator = allocator{}

func (a allocator) Transid() ondisk.Generation { return a.f.transid }

// metaKind is the block group type tree blocks of owner come from.
func metaKind(owner ondisk.ObjectID) uint64 {
	if owner == ondisk.ChunkTreeObjectID {
		return ondisk.BlockGroupSystem
	}
	return ondisk.BlockGroupMetadata
}

// allocTreeBlock reserves nodesize bytes of metadata (or system) space,
// adding a chunk when the groups are full. mirrors btrfs_reserve_extent for tree blocks
func (f *Engine) allocTreeBlock(owner ondisk.ObjectID) (ondisk.LogicalAddr, error) {
	kind := metaKind(owner)
	ns := uint64(f.super.NodeSize)
	addr, err := f.groups.Alloc(kind, ns, uint64(f.super.SectorSize), true)
	if errors.Is(err, syscall.ENOSPC) {
		if _, cerr := f.allocChunk(kind); cerr == nil {
			addr, err = f.groups.Alloc(kind, ns, uint64(f.super.SectorSize), true)
		}
	}
	if err != nil {
		// The B-tree operation asking is half done; like the kernel, give
		// up the transaction (the disk keeps the last commit). Handles that
		// reserve first never get here.
		return 0, f.abort(fmt.Errorf("allocate tree block for tree %s: %w", ondisk.TreeName(owner), err))
	}
	f.metaRsv -= min(f.metaRsv, ns)
	return addr, nil
}

// initHeader makes n a block of this transaction at its address for owner.
func (f *Engine) initHeader(n *diskio.Node, owner ondisk.ObjectID, level int) {
	h := n.Header()
	h.Bytenr = n.Addr
	h.FSID = f.fsid
	h.ChunkTreeUUID = f.ctUUID
	h.Generation = f.transid
	h.Owner = owner
	h.Level = uint8(level)
	h.Flags &^= ondisk.HeaderFlagWritten | ondisk.HeaderFlagReloc
	h.BackrefRev = ondisk.MixedBackrefRev
	h.Csum = [ondisk.CsumSize]byte{}
	h.Encode(n.Data)
}

// newBlock allocates a block for owner at level and queues its first
// reference (by owner's tree). mirrors btrfs_alloc_tree_block
func (f *Engine) newBlock(owner ondisk.ObjectID, level int, content []byte) (*diskio.Node, error) {
	addr, err := f.allocTreeBlock(owner)
	if err != nil {
		return nil, err
	}
	n := &diskio.Node{Addr: addr, Data: make([]byte, f.super.NodeSize)}
	if content != nil {
		copy(n.Data, content)
	}
	f.initHeader(n, owner, level)
	ns := uint64(f.super.NodeSize)
	if err := f.refs.Allocated(addr, ns, level, delayedref.TreeRef(owner, 0), 1); err != nil {
		return nil, err
	}
	f.Info.R.Invalidate(addr)
	f.dirty[addr] = n
	return n, nil
}

func (a allocator) NewBlock(owner ondisk.ObjectID, level int) (*diskio.Node, error) {
	if err := a.f.usable(); err != nil {
		return nil, err
	}
	return a.f.newBlock(owner, level, nil)
}

// inPlace reports whether n may be changed without a copy: it was made in
// this transaction by this tree (no snapshot shares it: Snapshot commits
// first). mirrors should_cow_block
func (f *Engine) inPlace(owner ondisk.ObjectID, n *diskio.Node) bool {
	return n.Generation() == f.transid && f.dirty[n.Addr] == n && n.Owner() == owner
}

// CowBlock copies n for owner, fixing the references a shared block needs,
// and drops owner's reference to n. mirrors btrfs_cow_block / __btrfs_cow_block
func (a allocator) CowBlock(owner ondisk.ObjectID, n *diskio.Node, parent *diskio.Node) (*diskio.Node, error) {
	f := a.f
	if err := f.usable(); err != nil {
		return nil, err
	}
	if f.inPlace(owner, n) {
		return n, nil
	}
	cow, err := f.newBlock(owner, n.Level(), n.Data)
	if err != nil {
		return nil, err
	}
	lastRef, err := f.ext.UpdateRefForCow(f.env(), f.root(owner), n, cow, parent == nil)
	if err != nil {
		return nil, f.abort(fmt.Errorf("cow block %d (tree %s): %w", uint64(n.Addr), ondisk.TreeName(owner), err))
	}
	if err := f.freeTreeBlock(owner, n, lastRef); err != nil {
		return nil, err
	}
	return cow, nil
}

// FreeBlock drops owner's reference to a block removed from its tree.
func (a allocator) FreeBlock(owner ondisk.ObjectID, n *diskio.Node) error {
	if err := a.f.usable(); err != nil {
		return err
	}
	return a.f.freeTreeBlock(owner, n, true)
}

// freeTreeBlock queues the drop of owner's reference to n. A block made in
// this transaction that nothing else references goes back to free space at
// once. mirrors btrfs_free_tree_block
func (f *Engine) freeTreeBlock(owner ondisk.ObjectID, n *diskio.Node, lastRef bool) error {
	ns := uint64(f.super.NodeSize)
	if err := f.refs.Add(n.Addr, ns, n.Level(), delayedref.TreeRef(owner, 0), -1); err != nil {
		return f.abort(err)
	}
	if !lastRef || n.Generation() != f.transid || f.dirty[n.Addr] != n {
		return nil
	}
	h := f.refs.Lookup(n.Addr)
	if h == nil || !h.MustInsert || len(h.Mods()) != 0 || h.SetFlags != 0 {
		return nil
	}
	f.refs.Remove(n.Addr)
	delete(f.dirty, n.Addr)
	f.Info.R.Invalidate(n.Addr)
	if err := f.groups.Release(n.Addr, ns); err != nil {
		return f.abort(err)
	}
	return nil
}

// Dirty records that n (a block of this transaction) changed.
func (a allocator) Dirty(n *diskio.Node) {
	f := a.f
	if f.dirty[n.Addr] != n && f.allocErr == nil {
		f.allocErr = fmt.Errorf("txn: block %d (gen %d) dirtied but not allocated in transaction %d",
			uint64(n.Addr), n.Generation(), f.transid)
	}
}

// usable refuses work after an abort.
func (f *Engine) usable() error {
	if p := f.aborted.Load(); p != nil {
		return *p
	}
	return nil
}

// env adapts f to the extent and blockgroup packages' Trees.
func (f *Engine) env() txTrees { return txTrees{f} }

type txTrees struct{ f *Engine }

func (t txTrees) Tree(id ondisk.ObjectID) (*ctree.Tree, error) {
	ts, err := t.f.tree(id)
	if err != nil {
		return nil, err
	}
	return ts.t, nil
}

func (t txTrees) Alloc() ctree.Allocator { return allocator(t) }

var _ blockgroup.Trees = txTrees{}
