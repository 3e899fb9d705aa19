package pagecache

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Writeback that lets readers in. Sync and Fsync hand an inode's dirty
// ranges to the backend with them off every list, so a caller that reads
// "disk + dirty" must hold them off for the whole writeback. SyncEach and
// FsyncEach instead move the dirty ranges to the inode's in-flight list,
// which Overlay, DirtyEnd and CleanRanges still see (as the kernel's
// pages under writeback stay in its page cache), and write them one at a
// time, each with lock held (ranges written within lockSlice of each other
// share one hold): a reader holding lock shared sees every range either in
// the cache or on disk, and waits for about lockSlice or one range's write,
// never for a whole sync.

// batch is one take of an inode's dirty ranges: sorted, non-overlapping.
type batch []span

// inflight is an inode's ranges handed to writeback and not yet written,
// oldest batch first. Guarded by Cache.mu.
type inflight struct {
	batches []batch
}

func (f *inflight) empty() bool { return len(f.batches) == 0 }

// overlay copies the in-flight bytes over p (file bytes at off), oldest
// first, so that newer batches win.
func (f *inflight) overlay(p []byte, off int64) {
	for _, b := range f.batches {
		overlaySpans(b, p, off)
	}
}

// bytes is the number of in-flight bytes.
func (f *inflight) bytes() int64 {
	var n int64
	for _, b := range f.batches {
		for _, s := range b {
			n += int64(len(s.data))
		}
	}
	return n
}

// maxEnd is the end of the last in-flight byte, or 0.
func (f *inflight) maxEnd() int64 {
	var e int64
	for _, b := range f.batches {
		if len(b) > 0 {
			e = max(e, b[len(b)-1].end())
		}
	}
	return e
}

// truncate drops in-flight bytes at or beyond size: they are not written.
func (f *inflight) truncate(size int64) {
	out := f.batches[:0]
	for _, b := range f.batches {
		d := dirtyRanges{spans: b}
		d.truncate(size)
		if len(d.spans) > 0 {
			out = append(out, d.spans)
		}
	}
	f.batches = out
}

// pop removes and returns the oldest in-flight range.
func (f *inflight) pop() (span, bool) {
	if len(f.batches) == 0 {
		return span{}, false
	}
	b := f.batches[0]
	s := b[0]
	if len(b) == 1 {
		f.batches = f.batches[1:]
	} else {
		f.batches[0] = b[1:]
	}
	if len(f.batches) == 0 {
		f.batches = nil
	}
	return s, true
}

// covered appends the in-flight ranges meeting [off, end) to out.
func (f *inflight) covered(out [][2]int64, off, end int64) [][2]int64 {
	for _, b := range f.batches {
		i := sort.Search(len(b), func(i int) bool { return b[i].end() > off })
		for ; i < len(b) && b[i].off < end; i++ {
			out = append(out, [2]int64{b[i].off, b[i].end()})
		}
	}
	return out
}

// SyncEach writes back every inode on the writeback list, as Sync, one
// range at a time with lock held around each (see above).
func (c *Cache) SyncEach(lock sync.Locker) error {
	_, err := c.SyncSettled(lock, 0)
	return err
}

// SyncSettled is SyncEach for background writeback: of each inode with
// more than hold dirty bytes only what has settled is written (see
// dirtyRanges.takeSettled), so that a stream is written back in whole
// pieces. hold 0 writes everything. waiting counts the inodes left alone
// for a hole whose WRITE is on its way: a caller wanting progress tries
// again shortly.
func (c *Cache) SyncSettled(lock sync.Locker, hold int64) (waiting int, err error) {
	c.mu.Lock()
	var list []*Inode
	for in := c.head.next; in != &c.head; in = in.next {
		list = append(list, in)
	}
	c.stats.SyncVisited = uint64(len(list))
	c.mu.Unlock()
	for _, in := range list {
		hole, werr := c.writebackEach(in, lock, hold)
		if werr != nil && err == nil {
			err = werr
		}
		if hole {
			waiting++
		}
	}
	return waiting, err
}

// FsyncEach writes back k's dirty data, as Fsync, one range at a time
// with lock held around each.
func (c *Cache) FsyncEach(k ondisk.InodeRef, lock sync.Locker) error {
	c.mu.Lock()
	in := c.inodes[k]
	c.mu.Unlock()
	if in == nil {
		return nil
	}
	_, err := c.writebackEach(in, lock, 0)
	return err
}

// writebackEach moves in's dirty ranges (but the last hold bytes, see
// SyncSettled) to its in-flight list, then writes the in-flight list (its
// own ranges and any an earlier call left) one range at a time until it
// is empty.
func (c *Cache) writebackEach(in *Inode, lock sync.Locker, hold int64) (hole bool, err error) {
	lock.Lock()
	c.mu.Lock()
	waited := !in.holeSince.IsZero() && time.Since(in.holeSince) >= holeWait
	spans, hole := in.dirty.takeSettled(hold, in.frontier, !waited)
	switch {
	case hole && in.holeSince.IsZero():
		in.holeSince = time.Now()
	case !hole:
		in.holeSince = time.Time{}
	}
	if len(spans) > 0 {
		for _, s := range spans {
			c.dirty -= int64(len(s.data))
		}
		in.wb.batches = append(in.wb.batches, spans)
		in.frontier = spans[len(spans)-1].end()
		c.recount(in)
	}
	c.mu.Unlock()
	lock.Unlock()
	for {
		lock.Lock()
		t0 := time.Now()
		more, err := c.writeOne(in)
		for err == nil && more && time.Since(t0) < lockSlice {
			more, err = c.writeOne(in)
		}
		lock.Unlock()
		if err != nil || !more {
			return hole, err
		}
	}
}

// lockSlice is how long writebackEach keeps the lock for consecutive small
// ranges: readers wait at most about this (or one large range), and a sync
// of many 4 KiB ranges does not take and drop the lock for every one. A
// variable so the tests can let readers in after every range.
var lockSlice = 2 * time.Millisecond

// holeWait is how long background writeback leaves a stream whose next
// bytes are missing (takeSettled): the WRITEs on their way arrive within
// milliseconds; a hole older than this is the file's own.
const holeWait = 100 * time.Millisecond

// writeOne writes in's oldest in-flight range; more is false once none is
// left. On failure every in-flight range goes back beneath the dirty
// bytes, so nothing is lost.
func (c *Cache) writeOne(in *Inode) (more bool, err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	c.mu.Lock()
	s, ok := in.wb.pop()
	if !ok {
		if len(in.dirty.spans) == 0 && !in.underWB {
			c.clear(in)
		}
		c.mu.Unlock()
		return false, nil
	}
	in.underWB = true
	c.recount(in)
	c.mu.Unlock()

	err = c.backend.WriteBack(in.key, s.off, s.data)

	c.mu.Lock()
	defer c.mu.Unlock()
	in.underWB = false
	defer c.recount(in)
	if err != nil {
		rest := append([]batch{{s}}, in.wb.batches...)
		c.pending.Add(-int64(len(s.data)) - in.wb.bytes())
		in.wb.batches = nil
		for i := len(rest) - 1; i >= 0; i-- { // newest first: older bytes go beneath
			for _, r := range rest[i] {
				before := in.dirty.bytes
				in.dirty.writeUnder(r.off, r.data)
				c.dirty += in.dirty.bytes - before
				c.pending.Add(in.dirty.bytes - before)
			}
		}
		return false, fmt.Errorf("writeback inode %v at %d: %w", in.key, s.off, err)
	}
	c.stats.WrittenRanges++
	c.stats.WrittenBytes += uint64(len(s.data))
	c.pending.Add(-int64(len(s.data)))
	c.pool.put(s.data) // popped and written: nothing refers to it
	return true, nil
}
