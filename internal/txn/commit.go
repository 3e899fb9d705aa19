package txn

import (
	"fmt"
	"sort"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// maxCommitPasses bounds the settle loop; it converges in a few passes
// because a block COWed once in a transaction is changed in place after.
const maxCommitPasses = 64

// Commit commits the running transaction and returns once it is on disk.
// It holds the transaction lock only while it settles and freezes the new
// trees (steps 1-3): the next transaction runs while the blocks and the
// superblock are written. mirrors btrfs_commit_transaction (TRANS_STATE_UNBLOCKED)
func (f *Engine) Commit() error { return f.StartCommit()() }

// StartCommit freezes the running transaction as Commit does and returns
// the function that writes it: the caller calls it exactly once, without
// holding a handle, and it returns when the commit is on disk (nil at once
// when there was nothing to commit). Until then log syncs and the next
// commit wait.
func (f *Engine) StartCommit() (write func() error) {
	f.mu.Lock()
	c, err := f.freeze()
	f.mu.Unlock()
	if c == nil {
		return func() error { return err }
	}
	return func() error { return f.writeCommit(c) }
}

// needsCommit reports whether the running transaction changed anything.
func (f *Engine) needsCommit() bool {
	if len(f.dirty) > 0 || f.refs.Len() > 0 || f.superDirty || len(f.newData) > 0 || f.groups.HasDirty() || f.hasLog() {
		return true
	}
	for _, ts := range f.trees {
		if ts.t.RootChanged || ts.itemDirty {
			return true
		}
	}
	return false
}

// commitLocked commits and waits for the commit's writes with f.mu held
// (handles that commit from inside, Close, snapshots, space retries).
func (f *Engine) commitLocked() error {
	c, err := f.freeze()
	if c == nil {
		return err
	}
	return f.writeCommit(c)
}

// freeze runs the locked part of a commit (f.mu held): it waits for the
// previous commit's writes, settles the trees, makes the superblock and
// hands the frozen blocks to the returned commitWrite; the next
// transaction starts. It returns nil and no error when nothing changed.
// A failure leaves the disk at the previous generation; the filesystem is
// then aborted (no further writes). On success f.log.mu stays locked
// until writeCommit ends.
func (f *Engine) freeze() (*commitWrite, error) {
	if err := f.waitWriting(); err != nil {
		return nil, err
	}
	if err := f.usable(); err != nil {
		return nil, err
	}
	if f.allocErr != nil {
		return nil, f.abort(f.allocErr)
	}
	if !f.needsCommit() {
		return nil, nil
	}
	// No log sync may write a superblock while the commit writes its own.
	f.log.mu.Lock()
	c, err := f.freezeLog()
	if err != nil {
		f.log.mu.Unlock()
		return nil, err
	}
	return c, nil
}

// freezeLog is freeze with f.log.mu held.
func (f *Engine) freezeLog() (*commitWrite, error) {
	start := time.Now()

	// 1. Data extents allocated but never referenced are given back (after
	//    this commit: they may have been written).
	for addr, n := range f.newData {
		if err := f.groups.ReleasePinned(addr, n); err != nil {
			return nil, f.abort(err)
		}
	}
	clear(f.newData)
	//    The log tree dies with this commit: its blocks become free once the
	//    new superblock (log_root 0) is on disk. mirrors btrfs_free_log_tree
	if err := f.dropLog(); err != nil {
		return nil, f.abort(err)
	}

	//    A reader expects the root tree's root block at the superblock's
	//    generation: a commit that would not touch the root tree (only the
	//    superblock changed) rewrites one root item to COW it.
	if err := f.touchRootTree(); err != nil {
		return nil, f.abort(fmt.Errorf("commit %d: %w", f.transid, err))
	}

	// 2. Settle: insert new chunks' items, run the delayed refs (extent
	//    tree, free space tree, csums of freed data), write the root items
	//    of moved roots and the block group items of changed groups, until a
	//    pass changes nothing. mirrors btrfs_run_delayed_refs +
	//    btrfs_create_pending_block_groups + commit_fs_roots +
	//    commit_cowonly_roots + btrfs_write_dirty_block_groups
	passes, heads, err := f.settle()
	tSettle := time.Now()
	if err != nil {
		return nil, f.abort(fmt.Errorf("commit %d: %w", f.transid, err))
	}
	if err := f.groups.Check(); err != nil {
		return nil, f.abort(fmt.Errorf("commit %d: space accounting: %w", f.transid, err))
	}
	for _, kind := range []uint64{ondisk.BlockGroupData, ondisk.BlockGroupMetadata, ondisk.BlockGroupSystem} {
		if r := f.groups.Space(kind).Reserved; r != 0 {
			return nil, f.abort(fmt.Errorf("commit %d: %d bytes of %s still reserved after running delayed refs",
				f.transid, r, blockgroup.KindName(kind)))
		}
	}

	// 3. The new superblock: generation, root and chunk roots, bytes used,
	//    device bytes used, backup roots. mirrors update_super_roots + backup_super_roots
	sb, err := f.newSuper()
	if err != nil {
		return nil, f.abort(fmt.Errorf("commit %d: %w", f.transid, err))
	}
	//    Checksum the dirty blocks and map their copies, then freeze them:
	//    the next transaction reads them from memory until they are
	//    written and COWs them (their generation is not its own).
	c := &commitWrite{transid: f.transid, sb: sb, start: start, settle: tSettle.Sub(start),
		heads: heads, passes: passes}
	if err := f.prepareDirty(c); err != nil {
		return nil, f.abort(fmt.Errorf("commit %d: write tree blocks: %w", f.transid, err))
	}
	f.startNext(sb)
	c.locked = time.Since(start)
	f.writing = c
	return c, nil
}

// settle runs the commit loop (step 2) until nothing changes.
func (f *Engine) settle() (passes, heads int, err error) {
	tr := f.env()
	cfg := blockgroup.PendingConfig{BlockGroupTree: f.bgTree, ChunkTreeUUID: f.ctUUID, Super: f.super}
	if _, err := f.updateQgroupStatus(); err != nil {
		return 0, 0, err
	}
	for passes = 1; passes <= maxCommitPasses; passes++ {
		created, err := f.groups.CreatePending(tr, cfg)
		if err != nil {
			return passes, heads, err
		}
		if f.fst && created > 0 {
			fstTree, err := tr.Tree(ondisk.FreeSpaceTreeObjectID)
			if err != nil {
				return passes, heads, err
			}
			fs := blockgroup.FreeSpace{M: f.groups, Editor: blockgroup.TreeEditor{T: fstTree, A: tr.Alloc()}}
			if err := fs.AddNewGroups(); err != nil {
				return passes, heads, err
			}
		}
		ran, err := f.ext.RunDelayedRefs(tr, f.transid)
		heads += ran
		if err != nil {
			return passes, heads, err
		}
		roots, err := f.updateRootItems()
		if err != nil {
			return passes, heads, err
		}
		bgs, err := f.groups.WriteDirty(tr, f.bgTree)
		if err != nil {
			return passes, heads, err
		}
		if created == 0 && ran == 0 && roots == 0 && bgs == 0 && f.refs.Len() == 0 {
			return passes, heads, nil
		}
	}
	return passes, heads, fmt.Errorf("commit does not settle after %d passes", maxCommitPasses)
}

// touchRootTree marks the extent tree's root item for rewriting unless the
// root tree's root block already belongs to this transaction.
func (f *Engine) touchRootTree() error {
	if _, _, gen, _ := f.rootOf(ondisk.RootTreeObjectID); gen == f.transid {
		return nil
	}
	ts, err := f.tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		return err
	}
	ts.itemDirty = true
	return nil
}

// updateRootItems writes the ROOT_ITEM of every tree whose root moved.
// mirrors update_cowonly_root / commit_fs_roots (btrfs_update_root)
func (f *Engine) updateRootItems() (int, error) {
	ids := make([]ondisk.ObjectID, 0, len(f.trees))
	for id, ts := range f.trees {
		if ts.hasItem && (ts.t.RootChanged || ts.itemDirty) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) == 0 {
		return 0, nil
	}
	rt, err := f.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return 0, err
	}
	a := allocator{f}
	for _, id := range ids {
		ts := f.trees[id]
		ts.t.RootChanged, ts.itemDirty = false, false
		ts.item.Bytenr, ts.item.Level, ts.item.Generation = ts.t.Root, uint8(ts.t.Level), ts.t.Gen
		ts.item.GenerationV2 = ts.item.Generation
		if err := rt.t.UpdateItem(a, ts.key, ts.item.Bytes()); err != nil {
			return 0, fmt.Errorf("update root item of tree %s: %w", ondisk.TreeName(id), err)
		}
	}
	return len(ids), nil
}
