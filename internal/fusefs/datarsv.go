package fusefs

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// Data space for buffered bytes.
//
// A WRITE is taken into the daemon's page cache only with data space
// reserved for it in fsops (ReserveData, the data space_info's
// bytes_may_use), so that its writeback finds the space: other operations
// (fallocate, clones, writebacks of other files) cannot take it, and two
// WRITEs cannot both see the same free bytes. The mount holds one pool
// (rwState.rsv) rather than a reservation per range: each write adds the
// sectors it touches; each writeback takes the sectors it writes
// (takeReserve) and fsops releases them when the write succeeds. Bytes
// overwritten while still buffered, or dropped (truncate, unlink), leave
// more held than is buffered: trimReserve gives that back. A write that
// found no space but goes in place (NODATACOW, prealloc) holds nothing;
// its inode's writeback then takes that much less from the pool
// (nocowAccepted, nocowTake), so that it does not use what others hold.

// sectorSpan is the bytes of the 4 KiB sectors [off, off+n) touches.
func sectorSpan(off int64, n int) int64 {
	const s = 4096
	if n <= 0 {
		return 0
	}
	start := off &^ (s - 1)
	end := (off + int64(n) + s - 1) &^ (s - 1)
	return end - start
}

// takeReserve takes up to n bytes from the pool for a writeback; the
// caller puts them back (rsv.Add) if the write fails.
func (r *rwState) takeReserve(n int64) int64 {
	for {
		h := r.rsv.Load()
		t := min(h, n)
		if t <= 0 {
			return 0
		}
		if r.rsv.CompareAndSwap(h, h-t) {
			return t
		}
	}
}

// unreserve gives n bytes of the pool back to fsops.
func (r *rwState) unreserve(n int64) {
	n = r.takeReserve(n)
	if n > 0 {
		r.ops.ReleaseData(uint64(n))
	}
}

// trimReserve gives back what the pool holds beyond the sectors buffered
// bytes touch (and those of writes on their way into the cache).
// unplaced is read before the cache: a write moving its bytes into the
// cache meanwhile is counted twice, never not at all.
func (r *rwState) trimReserve() {
	r.trimMeta()
	keep := r.unplaced.Load()
	keep += r.cache.PendingBlocks(4096)
	for {
		h := r.rsv.Load()
		if h <= keep {
			return
		}
		if r.rsv.CompareAndSwap(h, keep) {
			r.ops.ReleaseData(uint64(h - keep))
			return
		}
	}
}

// nocowAccepted records need bytes of id taken without a reservation.
func (r *rwState) nocowAccepted(id ondisk.InodeRef, need int64) {
	r.mu.Lock()
	r.nocow[id] += need
	r.mu.Unlock()
}

// nocowTake takes up to n of id's bytes taken without a reservation: a
// writeback of n bytes of id needs that much less from the pool.
func (r *rwState) nocowTake(id ondisk.InodeRef, n int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	have, ok := r.nocow[id]
	if !ok {
		return 0
	}
	t := min(have, n)
	if have -= t; have <= 0 {
		delete(r.nocow, id)
	} else {
		r.nocow[id] = have
	}
	return t
}
