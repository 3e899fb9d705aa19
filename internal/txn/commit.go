package txn

import (
	"fmt"
	"sort"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// maxCommitPasses bounds the settle loop; it converges in a few passes
// because a block COWed once in a transaction is changed in place after.
const maxCommitPasses = 64

// Commit commits the running transaction, waiting for the current handle
// to end.
func (f *Engine) Commit() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commitLocked()
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

// commitLocked turns the running transaction into the next generation on
// disk. f.mu is held. A failure before step 5 leaves the disk at the previous
// generation; the filesystem is then aborted (no further writes).
// mirrors btrfs_commit_transaction
func (f *Engine) commitLocked() error {
	if err := f.usable(); err != nil {
		return err
	}
	if f.allocErr != nil {
		return f.abort(f.allocErr)
	}
	if !f.needsCommit() {
		return nil
	}
	// No log sync may write a superblock while the commit writes its own.
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	start := time.Now()

	// 1. Data extents allocated but never referenced are given back (after
	//    this commit: they may have been written).
	for addr, n := range f.newData {
		if err := f.groups.ReleasePinned(addr, n); err != nil {
			return f.abort(err)
		}
	}
	clear(f.newData)
	//    The log tree dies with this commit: its blocks become free once the
	//    new superblock (log_root 0) is on disk. mirrors btrfs_free_log_tree
	if err := f.dropLog(); err != nil {
		return f.abort(err)
	}

	//    A reader expects the root tree's root block at the superblock's
	//    generation: a commit that would not touch the root tree (only the
	//    superblock changed) rewrites one root item to COW it.
	if err := f.touchRootTree(); err != nil {
		return f.abort(fmt.Errorf("commit %d: %w", f.transid, err))
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
		return f.abort(fmt.Errorf("commit %d: %w", f.transid, err))
	}
	if err := f.groups.Check(); err != nil {
		return f.abort(fmt.Errorf("commit %d: space accounting: %w", f.transid, err))
	}
	for _, kind := range []uint64{ondisk.BlockGroupData, ondisk.BlockGroupMetadata, ondisk.BlockGroupSystem} {
		if r := f.groups.Space(kind).Reserved; r != 0 {
			return f.abort(fmt.Errorf("commit %d: %d bytes of %s still reserved after running delayed refs",
				f.transid, r, blockgroup.KindName(kind)))
		}
	}

	// 3. The new superblock: generation, root and chunk roots, bytes used,
	//    device bytes used, backup roots. mirrors update_super_roots + backup_super_roots
	sb, err := f.newSuper()
	if err != nil {
		return f.abort(fmt.Errorf("commit %d: %w", f.transid, err))
	}

	// 4. Write every dirty tree block (checksummed, to every copy) and flush:
	//    the new trees are durable before anything points at them.
	//    mirrors btrfs_write_and_wait_transaction
	tWrite := time.Now()
	written, err := f.writeDirty()
	if err == nil {
		err = f.Info.Dev.Flush()
	}
	if err != nil {
		return f.abort(fmt.Errorf("commit %d: write tree blocks: %w", f.transid, err))
	}
	tSuper := time.Now()

	// 5. Write the superblock to the primary and every mirror that fits,
	//    then flush: this switches the filesystem to the new generation.
	//    mirrors write_all_supers
	if err := f.writeSupers(sb); err != nil {
		return f.abort(fmt.Errorf("commit %d: write superblocks: %w", f.transid, err))
	}
	if err := f.Info.Dev.Flush(); err != nil {
		return f.abort(fmt.Errorf("commit %d: flush superblocks: %w", f.transid, err))
	}
	end := time.Now()
	crit := end.Sub(start)

	// 6. The transaction is on disk: unpin the space it freed, let the trees
	//    read their written blocks through the cache, start the next one.
	//    mirrors btrfs_finish_extent_commit
	f.finish(sb)
	if invariants {
		f.checkCommitted(uint64(sb.Generation))
	}
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	f.stats.Commits++
	f.stats.LastCommit = crit
	f.stats.MaxCommit = max(f.stats.MaxCommit, crit)
	f.stats.TotalCommit += crit
	f.stats.LastSettle = tSettle.Sub(start)
	f.stats.LastWrite = tSuper.Sub(tWrite)
	f.stats.LastSuper = end.Sub(tSuper)
	f.stats.LastRefHeads = heads
	f.stats.LastBlocks = written
	f.stats.LastLoops = passes
	return nil
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

// finish is step 6 of the commit.
func (f *Engine) finish(sb *ondisk.Superblock) {
	f.groups.Unpin()
	for _, n := range f.dirty {
		f.Info.R.Put(n)
	}
	for _, ts := range f.trees {
		ts.t.ForgetBlocks()
		ts.t.RootChanged = false
	}
	f.Info.RootTree.ForgetBlocks()
	*f.Info.Super = *sb
	next := *sb
	f.super = &next
	f.superDirty = false
	f.dirty = map[ondisk.LogicalAddr]*diskio.Node{}
	f.transid++
	f.transidPub.Store(uint64(f.transid))
	f.totalPub.Store(sb.TotalBytes)
}
