package txn

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// commitWrite is a frozen transaction whose blocks and superblock are
// being written without the transaction lock (steps 4-6 of the commit),
// while the next transaction runs. Its blocks are never changed again:
// the next transaction reads them through the reader, which holds them
// until they are on disk (diskio.Reader.Hold), and COWs them. The space
// it freed stays pinned until its superblock is flushed
// (blockgroup.Manager.FreezePinned). mirrors TRANS_STATE_UNBLOCKED
type commitWrite struct {
	transid ondisk.Generation
	sb      *ondisk.Superblock // the superblock to write (owned by the commit)
	nodes   []*diskio.Node     // dirty tree blocks, checksummed
	ws      []devWrite         // their copies on the devices

	start          time.Time
	settle, locked time.Duration
	heads, passes  int

	done chan struct{} // closed when written (or failed: err)
	err  error
}

// prepareDirty checksums every dirty tree block, maps its copies into c
// and has the reader hold the blocks. f.mu is held.
// mirrors btree_write_cache_pages + csum_dirty_buffer (the CPU part)
func (f *Engine) prepareDirty(c *commitWrite) error {
	ns := uint64(f.super.NodeSize)
	c.nodes = make([]*diskio.Node, 0, len(f.dirty))
	for addr, n := range f.dirty {
		if n.Generation() != f.transid || n.Addr != addr {
			return fmt.Errorf("block %d: generation %d in transaction %d", uint64(addr), n.Generation(), f.transid)
		}
		fl := binary.LittleEndian.Uint64(n.Data[0x38:])
		binary.LittleEndian.PutUint64(n.Data[0x38:], fl|ondisk.HeaderFlagWritten)
		f.Info.Csum.SetBlock(n.Data)
		copies, avail, err := f.Info.Chunks.Map(addr, ns)
		if err != nil {
			return fmt.Errorf("block %d: %w", uint64(addr), err)
		}
		if avail < ns {
			return fmt.Errorf("block %d: crosses a stripe boundary", uint64(addr))
		}
		for _, cp := range copies {
			c.ws = append(c.ws, devWrite{cp.Physical, n.Data})
		}
		c.nodes = append(c.nodes, n)
	}
	c.done = make(chan struct{})
	f.Info.R.Hold(c.nodes)
	return nil
}

// startNext makes the frozen transaction's state the base of the next
// one: the trees forget their blocks (the reader holds them), sb becomes
// the committed superblock in memory, space freed so far stays pinned for
// the commit being written. f.mu is held. mirrors the end of
// btrfs_commit_transaction's locked part (switch_commit_roots)
func (f *Engine) startNext(sb *ondisk.Superblock) {
	for _, ts := range f.trees {
		ts.t.ForgetBlocks()
		ts.t.RootChanged = false
	}
	f.Info.RootTree.ForgetBlocks()
	f.groups.FreezePinned()
	*f.Info.Super = *sb
	next := *sb
	f.super = &next
	f.superDirty = false
	f.dirty = map[ondisk.LogicalAddr]*diskio.Node{}
	f.transid++
	f.transidPub.Store(uint64(f.transid))
	f.totalPub.Store(sb.TotalBytes)
}

// waitWriting waits for the previous commit's writes (f.mu held: the
// writer never takes it). Commits reach the disk in order.
func (f *Engine) waitWriting() error {
	c := f.writing
	if c == nil {
		return nil
	}
	<-c.done
	f.writing = nil
	return c.err
}

// writeCommit writes c's blocks and flushes (the new trees are durable
// before anything points at them), then the superblocks and flushes again
// (this switches the disk to the new generation), then unpins the space c
// freed. It runs without f.mu and releases f.log.mu, which freeze took.
// A failure aborts the filesystem; the disk keeps the previous generation.
// mirrors btrfs_write_and_wait_transaction + write_all_supers + btrfs_finish_extent_commit
func (f *Engine) writeCommit(c *commitWrite) error {
	defer f.log.mu.Unlock()
	defer close(c.done)
	// 4. Every dirty tree block, to every copy; flush.
	tWrite := time.Now()
	err := f.writeBatched(c.ws, nil)
	if err == nil {
		err = f.Info.Dev.Flush()
	}
	if err != nil {
		err = fmt.Errorf("commit %d: write tree blocks: %w", c.transid, err)
	}
	tSuper := time.Now()
	// 5. The superblock to the primary and every mirror that fits; flush.
	if err == nil {
		if err = f.writeSupers(c.sb); err != nil {
			err = fmt.Errorf("commit %d: write superblocks: %w", c.transid, err)
		} else if err = f.Info.Dev.Flush(); err != nil {
			err = fmt.Errorf("commit %d: flush superblocks: %w", c.transid, err)
		}
	}
	end := time.Now()
	f.Info.R.Release(c.nodes)
	if err != nil {
		c.err = f.abortAt(c.transid, err)
		return c.err
	}
	// 6. On disk: views show this commit from now on (view.go), and the
	//    space the transaction freed is free once no view of the previous
	//    commit is open.
	f.publishView(c.sb, f.groups.UnpinCommitted)
	if invariants {
		f.checkCommitted(uint64(c.sb.Generation))
	}
	total := end.Sub(c.start)
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	f.stats.Commits++
	f.stats.LastCommit = total
	f.stats.MaxCommit = max(f.stats.MaxCommit, total)
	f.stats.TotalCommit += total
	f.stats.LastLocked = c.locked
	f.stats.MaxLocked = max(f.stats.MaxLocked, c.locked)
	f.stats.LastSettle = c.settle
	f.stats.LastWrite = tSuper.Sub(tWrite)
	f.stats.LastSuper = end.Sub(tSuper)
	f.stats.LastRefHeads = c.heads
	f.stats.LastBlocks = len(c.nodes)
	f.stats.LastLoops = c.passes
	return nil
}
