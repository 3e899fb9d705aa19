package fusefs

import (
	"errors"
	"fmt"
	"syscall"
)

// Metadata for buffered bytes.
//
// Writing buffered data back needs metadata too: its file extent items,
// extent items and checksums, and the transaction's reservation for them.
// The kernel reserves that at write(2) with the data space
// (btrfs_delalloc_reserve_metadata); without it, xattrs, small (inline)
// files or directories filling the metadata space after a write was
// accepted made its writeback fail with ENOSPC, and fsync with it.
// So the mount holds metadata in fsops (HoldMeta) for every range the
// cache has to write back, as one pool (rwState.meta) sized from the
// number of ranges (pagecache.Cache.Spans): metaSpanItems each, and
// metaBaseItems for the reservation of the one writeback running. Other
// operations cannot use it; writebacks (fsops.WriteAtHeld) can. The pool
// grows by at least metaGrowItems at a time, by no more than half the free
// metadata without a writeback first (txn.Handle.HoldMeta), and is
// trimmed when the ranges are written back or dropped (trimMeta).
const (
	// metaBaseItems: what one writeback reserves for itself (fsops'
	// write: the extents it replaces, the new extent and its checksums,
	// the inode and a hole, an inline extent made regular).
	metaBaseItems = 10
	// metaSpanItems: what a range's writeback changes: a range is at most
	// 8 MiB (pagecache's maxSpan), one extent and one checksum leaf.
	metaSpanItems = 2
	// metaGrowItems: the step the pool grows by (when that fits), so that
	// writes ask fsops (which waits for the running operation) rarely;
	// metaSlackItems: the surplus a trim leaves.
	metaGrowItems  = 32
	metaSlackItems = 8
)

// metaWant is the metadata the ranges to write back need (those in the
// cache and those of writes on their way into it).
func (r *rwState) metaWant() int64 {
	spans := r.cache.Spans() + r.unplacedSpans.Load()
	if spans <= 0 {
		return 0
	}
	return int64(r.ops.MetaItemBytes(metaBaseItems + int(spans)*metaSpanItems))
}

// holdMeta makes the pool cover metaWant; the caller counted its write in
// unplacedSpans. As reserve does for data, when fsops refuses it writes
// everything back first (which needs less than it holds), then lets fsops
// add a metadata chunk or commit, and only then fails with ENOSPC.
func (r *rwState) holdMeta() error { return r.holdMetaWith(r.flushAll) }

// holdMetaWith is holdMeta with flush as the way to write everything
// back (a caller holding wbMu cannot use flushAll).
func (r *rwState) holdMetaWith(flush func() error) error {
	try := func(mayGrow bool) (bool, error) {
		want := r.metaWant()
		have := r.meta.Load()
		if have >= want {
			return true, nil
		}
		item := int64(r.ops.MetaItemBytes(1))
		items := int((want - have + item - 1) / item)
		n, err := r.ops.HoldMeta(max(items, metaGrowItems), mayGrow)
		if err == nil {
			r.meta.Add(int64(n))
			return true, nil
		}
		if !errors.Is(err, syscall.ENOSPC) {
			return false, err
		}
		// the whole step may not fit where the items needed do
		if items < metaGrowItems {
			if n, err := r.ops.HoldMeta(items, mayGrow); err == nil {
				r.meta.Add(int64(n))
				return true, nil
			}
		}
		return false, nil
	}
	if ok, err := try(false); ok || err != nil {
		return err
	}
	if err := flush(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return err
	}
	r.trimMeta()
	if ok, err := try(false); ok || err != nil {
		return err
	}
	if ok, err := try(true); ok || err != nil {
		return err
	}
	return fmt.Errorf("metadata for buffered data: %w", syscall.ENOSPC)
}

// trimMeta gives back what the pool holds beyond metaWant and the slack.
func (r *rwState) trimMeta() {
	keep := r.metaWant()
	if keep > 0 {
		keep += int64(r.ops.MetaItemBytes(metaSlackItems))
	}
	for {
		h := r.meta.Load()
		if h <= keep {
			return
		}
		if r.meta.CompareAndSwap(h, keep) {
			r.ops.ReleaseMeta(uint64(h - keep))
			return
		}
	}
}

// withRoom runs fn, an operation that reserves metadata, and when it
// finds no room while metadata is held for buffered data, writes that
// data back (which gives back what it holds) and runs fn again: the
// kernel flushes delalloc for a reservation that fails (flush_space's
// FLUSH_DELALLOC), so a create beside a pending write fits as it does
// without one. fn must change nothing when it fails with ENOSPC (fsops
// reserves first). Callers may hold nsMu (flushAll takes wbMu after it,
// as released does), never wbMu.
func (r *rwState) withRoom(fn func() error) error {
	err := fn()
	if !errors.Is(err, syscall.ENOSPC) || r.meta.Load() == 0 {
		return err
	}
	if ferr := r.flushAll(); ferr != nil && !errors.Is(ferr, syscall.ENOSPC) {
		return err
	}
	return fn()
}
