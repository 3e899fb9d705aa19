package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// The calls below are what writing a log tree (internal/treelog, fsync)
// needs. Log tree blocks come from metadata space like any tree block but
// get no extent item and no delayed ref (the kernel's log trees are not in
// the extent tree either): they stay reserved in the running transaction,
// so nothing else is allocated over them, until the next commit, which
// drops the log (its superblock has log_root 0) and returns them to free
// space once that superblock is on disk. The data extents a log references
// were allocated in the running transaction and are likewise kept until
// the commit. mirrors btrfs_alloc_log_tree_node, btrfs_sync_log, btrfs_free_log_tree

// logState is the log of the running transaction.
type logState struct {
	// mu orders log syncs against commits (a commit holds it from its
	// start to the end of finish); it guards blocks.
	mu     sync.Mutex
	blocks map[ondisk.LogicalAddr]bool // reserved log blocks (on disk or being written)
	synced bool                        // the on-disk superblock points to a log of this transaction
	// scratch is SyncLog's coalescing buffer, kept across log syncs.
	scratch []byte
}

// ErrLogStale is returned by SyncLog when the transaction the log was built
// in has committed meanwhile: the commit made everything durable already.
var ErrLogStale = errors.New("txn: log belongs to a committed transaction")

// hasLog reports whether a log holds blocks (a commit must run to free them).
func (f *Engine) hasLog() bool {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	return len(f.log.blocks) > 0
}

// dropLog releases the log's blocks (pinned until the commit is on disk)
// and clears log_root in the superblock the commit writes. f.log.mu is held.
func (f *Engine) dropLog() error {
	ns := uint64(f.super.NodeSize)
	for addr := range f.log.blocks {
		if err := f.groups.ReleasePinned(addr, ns); err != nil {
			return fmt.Errorf("free log tree block %d: %w", uint64(addr), err)
		}
		f.Info.R.Invalidate(addr)
	}
	clear(f.log.blocks)
	f.log.synced = false
	f.super.LogRoot, f.super.LogRootLevel, f.super.LogRootTransid = 0, 0, 0
	return nil
}

// AllocLogBlock reserves a tree block for a log tree. It never adds a
// chunk (a log may not point into a chunk the committed chunk tree lacks):
// when metadata is full the error satisfies errors.Is(err, syscall.ENOSPC)
// and the caller commits instead.
func (h *Handle) AllocLogBlock() (ondisk.LogicalAddr, error) {
	if err := h.check(); err != nil {
		return 0, err
	}
	f := h.f
	ns := uint64(f.super.NodeSize)
	addr, err := f.groups.Alloc(ondisk.BlockGroupMetadata, ns, uint64(f.super.SectorSize), true)
	if err != nil {
		return 0, fmt.Errorf("txn: allocate log tree block: %w", err)
	}
	if g := f.groups.Lookup(addr); g == nil || g.Pending() {
		f.groups.Release(addr, ns)
		return 0, fmt.Errorf("txn: allocate log tree block: only a chunk of this transaction has room: %w", syscall.ENOSPC)
	}
	f.log.mu.Lock()
	if f.log.blocks == nil {
		f.log.blocks = map[ondisk.LogicalAddr]bool{}
	}
	f.log.blocks[addr] = true
	f.log.mu.Unlock()
	f.Info.R.Invalidate(addr)
	return addr, nil
}

// FreeLogBlocks returns log blocks that no superblock on disk points to
// any more (the previous log, after SyncLog wrote the new one; or a log
// whose sync failed) to free space at once. Blocks already dropped by a
// commit are skipped.
func (f *Engine) FreeLogBlocks(addrs []ondisk.LogicalAddr) error {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	ns := uint64(f.Info.Super.NodeSize)
	for _, a := range addrs {
		if !f.log.blocks[a] {
			continue
		}
		delete(f.log.blocks, a)
		if err := f.groups.Release(a, ns); err != nil {
			return fmt.Errorf("txn: free log tree block %d: %w", uint64(a), err)
		}
	}
	return nil
}

// InitLogBlock writes the header of a log tree block at addr into b:
// owner TREE_LOG, this transaction's generation. nritems is left as b has it.
func (h *Handle) InitLogBlock(b []byte, addr ondisk.LogicalAddr, level int) {
	nr := binary.LittleEndian.Uint32(b[0x60:])
	f := h.f
	hd := ondisk.Header{Bytenr: addr, FSID: f.fsid, ChunkTreeUUID: f.ctUUID, Generation: f.transid,
		Owner: ondisk.TreeLogObjectID, Level: uint8(level), BackrefRev: ondisk.MixedBackrefRev,
		Flags: ondisk.HeaderFlagWritten, NumItems: nr}
	hd.Encode(b)
}

// NewChunkPending reports whether a block group was created in the running
// transaction (the committed chunk tree does not know it: a log must not
// point into it). mirrors the btrfs_set_log_full_commit in btrfs_make_block_group
func (h *Handle) NewChunkPending() bool {
	for _, g := range h.f.groups.Groups() {
		if g.Pending() {
			return true
		}
	}
	return false
}

// CommittedSuper is the superblock of the last commit (what is on disk,
// apart from a log root).
func (h *Handle) CommittedSuper() ondisk.Superblock { return *h.f.Info.Super }

// SyncLog makes a log durable without a commit: it writes blocks (log tree
// and log root tree blocks of transaction transid, headers set with
// InitLogBlock) to every copy, flushes (with the data written before),
// writes the primary superblock of the last commit with log_root pointing
// at root, and flushes again. It must be called without a handle. It
// returns ErrLogStale, writing nothing, when transid has committed
// meanwhile. mirrors btrfs_sync_log
func (f *Engine) SyncLog(transid ondisk.Generation, blocks []*diskio.Node, root ondisk.LogicalAddr, level int) error {
	f.log.mu.Lock()
	defer f.log.mu.Unlock()
	if f.Transid() != transid {
		return ErrLogStale
	}
	ns := uint64(f.Info.Super.NodeSize)
	ws := make([]devWrite, 0, len(blocks))
	for _, n := range blocks {
		if !f.log.blocks[n.Addr] {
			return fmt.Errorf("txn: sync log: block %d is not a log block of transaction %d", uint64(n.Addr), transid)
		}
		f.Info.Csum.SetBlock(n.Data)
		copies, avail, err := f.Info.Chunks.Map(n.Addr, ns)
		if err != nil {
			return fmt.Errorf("txn: sync log: map block %d: %w", uint64(n.Addr), err)
		}
		if avail < ns {
			return fmt.Errorf("txn: sync log: map block %d: %d of %d bytes mapped", uint64(n.Addr), avail, ns)
		}
		for _, c := range copies {
			ws = append(ws, devWrite{c.Physical, n.Data})
		}
	}
	if err := f.writeBatched(ws, &f.log.scratch); err != nil {
		return fmt.Errorf("txn: sync log: write log tree blocks: %w", err)
	}
	if err := f.Info.Dev.Flush(); err != nil {
		return fmt.Errorf("txn: sync log: flush log tree blocks: %w", err)
	}
	sb := *f.Info.Super
	sb.LogRoot, sb.LogRootLevel = root, uint8(level)
	sb.Bytenr = ondisk.SuperMirrorOffsets[0]
	b := sb.Encode()
	f.Info.Csum.SetBlock(b)
	if _, err := f.Info.Dev.WriteAt(b, int64(sb.Bytenr)); err != nil {
		// The primary may be torn: the caller commits, which rewrites it.
		return fmt.Errorf("txn: sync log: write superblock: %w", err)
	}
	if err := f.Info.Dev.Flush(); err != nil {
		return fmt.Errorf("txn: sync log: flush superblock: %w", err)
	}
	f.log.synced = true
	return nil
}
