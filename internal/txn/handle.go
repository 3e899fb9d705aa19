package txn

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Handle is a caller's part in the running transaction: between Begin and
// End it has the filesystem to itself. A Handle is not safe for concurrent
// use, and one goroutine must not Begin twice without End (that would wait
// for itself). mirrors struct btrfs_trans_handle
type Handle struct {
	f     *Engine
	ended bool
	rsv   uint64 // bytes this handle reserved
	// held: the handle writes back buffered data and may use the
	// metadata held for it (UseHeldMeta)
	held bool
}

// Begin joins the running transaction, waiting for the current handle or
// commit to finish. mirrors btrfs_join_transaction
func (f *Engine) Begin() (*Handle, error) {
	f.mu.Lock()
	if err := f.usable(); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	return &Handle{f: f}, nil
}

// End leaves the transaction; its changes are committed by the next commit.
// mirrors btrfs_end_transaction
func (h *Handle) End() error {
	if h.ended {
		return nil
	}
	h.ended = true
	h.f.metaRsv -= min(h.f.metaRsv, h.rsv)
	h.f.mu.Unlock()
	return nil
}

// Commit commits the transaction (with everything other handles did in it)
// and ends the handle. mirrors btrfs_commit_transaction
func (h *Handle) Commit() error {
	if h.ended {
		return errors.New("txn: commit of an ended handle")
	}
	err := h.f.commitLocked()
	h.End()
	return err
}

// Transid is the running transaction's generation.
func (h *Handle) Transid() ondisk.Generation { return h.f.transid }

// Alloc is the allocator the B-tree write path uses in this transaction.
func (h *Handle) Alloc() ctree.Allocator { return allocator{h.f} }

// Tree returns tree id, writable in this transaction. The same *ctree.Tree
// is returned for the whole transaction (and after); its new root is
// recorded at commit (in its ROOT_ITEM, or in the superblock for the root
// and chunk trees).
func (h *Handle) Tree(id ondisk.ObjectID) (*ctree.Tree, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	ts, err := h.f.tree(id)
	if errors.Is(err, fsinfo.ErrNoTree) && !errors.Is(err, fs.ErrNotExist) {
		err = fmt.Errorf("%w (%w)", err, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("txn: tree %s: %w", ondisk.TreeName(id), err)
	}
	return ts.t, nil
}

func (h *Handle) check() error {
	if h.ended {
		return errors.New("txn: use of an ended handle")
	}
	return h.f.usable()
}

// Super returns the superblock the next commit writes; changes made through
// it (label, flags, features) are written with it. It is only valid while
// the handle is held.
func (h *Handle) Super() *ondisk.Superblock {
	h.f.superDirty = true
	return h.f.super
}
