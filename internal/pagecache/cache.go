package pagecache

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Backend persists dirty data. WriteBack receives each contiguous dirty range
// of one inode, in offset order; it chooses extent sizes (delayed allocation).
type Backend interface {
	WriteBack(k ondisk.InodeRef, off int64, data []byte) error
}

// Stats counts writeback-list events, like the seed's tracepoints
// (writeback_sb_inodes_list_add / del) and what the last sync visited.
type Stats struct {
	ListAdds      uint64 // inode marked: joined the writeback list
	ListDels      uint64 // inode cleared: left the list after writeback completed
	SyncVisited   uint64 // inodes visited by the last Sync
	CachedInodes  int    // inodes the cache knows of (clean + dirty)
	DirtyInodes   int    // inodes on the writeback list now
	DirtyBytes    int64
	WrittenRanges uint64 // ranges handed to the backend
	WrittenBytes  uint64
}

// Inode is the cache's per-inode state. It sits on the writeback list while
// it has dirty data or is under writeback.
type Inode struct {
	key   ondisk.InodeRef
	mu    sync.Mutex // serializes writeback of this inode
	dirty dirtyRanges
	wb    inflight // handed to writeback, not yet written (inflight.go)
	// frontier is where the last range taken for writeback ended, and
	// holeSince when background writeback first found a hole after it
	// (dirtyRanges.takeSettled). Guarded by Cache.mu.
	frontier  int64
	holeSince time.Time
	// intrusive writeback list links (guarded by Cache.mu)
	prev, next *Inode
	onList     bool
	underWB    bool
	// counted is what Cache.spans counts of in (spanCount). Guarded by Cache.mu.
	counted int
}

// spanCount is how many ranges of in are dirty, in flight or being
// written: each is one writeback of its own. Cache.mu is held.
func (in *Inode) spanCount() int {
	n := len(in.dirty.spans)
	for _, b := range in.wb.batches {
		n += len(b)
	}
	if in.underWB {
		n++
	}
	return n
}

// recount updates Cache.spans after in changed. Caller holds c.mu.
func (c *Cache) recount(in *Inode) {
	n := in.spanCount()
	c.spans.Add(int64(n - in.counted))
	in.counted = n
}

// Spans is how many ranges of all inodes are dirty, in flight or being
// written: how many writebacks the cache has to make, each needing its
// own metadata (a caller holds metadata for them). It takes no lock.
func (c *Cache) Spans() int64 { return c.spans.Load() }

// Cache is the per-filesystem buffered write cache.
type Cache struct {
	backend Backend
	limit   int64 // dirty bytes before writers flush

	mu     sync.Mutex
	inodes map[ondisk.InodeRef]*Inode
	head   Inode // sentinel of the writeback list
	dirty  int64
	// pending is dirty plus in-flight bytes: what the cache holds in
	// memory and what is still to be allocated on disk
	pending atomic.Int64
	// spans is the sum of the inodes' spanCount (recount)
	spans atomic.Int64
	pool  bufPool
	stats Stats
	// Trace, if set, receives "mark"/"clear" events per inode.
	Trace func(event string, k ondisk.InodeRef)
}

// New makes a cache that writes back through b once more than limit bytes are dirty.
func New(b Backend, limit int64) *Cache {
	c := &Cache{backend: b, limit: limit, inodes: map[ondisk.InodeRef]*Inode{}}
	c.head.next, c.head.prev = &c.head, &c.head
	return c
}

// Get returns the cached inode, creating a clean entry (callers cache clean
// inodes here too; they cost one map entry and never touch the list).
func (c *Cache) Get(k ondisk.InodeRef) *Inode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(k)
}

func (c *Cache) getLocked(k ondisk.InodeRef) *Inode {
	in := c.inodes[k]
	if in == nil {
		in = &Inode{key: k}
		in.dirty.pool = &c.pool
		c.inodes[k] = in
	}
	return in
}

// Forget drops a clean inode from the cache; a dirty one stays until written back.
func (c *Cache) Forget(k ondisk.InodeRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inodes[k]; in != nil && !in.onList {
		delete(c.inodes, k)
	}
}

// mark puts in on the writeback list. Caller holds c.mu.
func (c *Cache) mark(in *Inode) {
	if in.onList {
		return
	}
	in.onList = true
	in.prev, in.next = c.head.prev, &c.head
	c.head.prev.next = in
	c.head.prev = in
	c.stats.ListAdds++
	if c.Trace != nil {
		c.Trace("mark", in.key)
	}
}

// clear takes in off the writeback list. Caller holds c.mu.
func (c *Cache) clear(in *Inode) {
	if !in.onList {
		return
	}
	in.prev.next = in.next
	in.next.prev = in.prev
	in.prev, in.next, in.onList = nil, nil, false
	c.stats.ListDels++
	if c.Trace != nil {
		c.Trace("clear", in.key)
	}
}

// Write buffers data at off for inode k. When the cache holds more dirty bytes
// than its limit, it writes back (outside the lock) before returning.
func (c *Cache) Write(k ondisk.InodeRef, off int64, data []byte) error {
	c.mu.Lock()
	in := c.getLocked(k)
	before := in.dirty.bytes
	in.dirty.write(off, data)
	c.dirty += in.dirty.bytes - before
	c.pending.Add(in.dirty.bytes - before)
	c.mark(in)
	c.recount(in)
	over := c.limit > 0 && c.dirty > c.limit
	c.mu.Unlock()
	if over {
		return c.Sync()
	}
	return nil
}

// Overlay copies k's dirty bytes over p, which holds the on-disk bytes at off,
// and returns the end of dirty data (the file may be longer than on disk).
func (c *Cache) Overlay(k ondisk.InodeRef, p []byte, off int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.inodes[k]
	if in == nil {
		return 0
	}
	in.wb.overlay(p, off)
	in.dirty.overlay(p, off)
	return max(in.dirty.maxEnd(), in.wb.maxEnd())
}

// DirtyEnd is the end of k's dirty data, or 0.
func (c *Cache) DirtyEnd(k ondisk.InodeRef) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inodes[k]; in != nil {
		return max(in.dirty.maxEnd(), in.wb.maxEnd())
	}
	return 0
}

// Truncate drops k's dirty bytes at or beyond size.
func (c *Cache) Truncate(k ondisk.InodeRef, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.inodes[k]
	if in == nil {
		return
	}
	before, wbBefore := in.dirty.bytes, in.wb.bytes()
	in.dirty.truncate(size)
	in.wb.truncate(size)
	c.dirty += in.dirty.bytes - before
	c.pending.Add(in.dirty.bytes - before + in.wb.bytes() - wbBefore)
	c.recount(in)
	if in.dirty.bytes == 0 && !in.underWB && len(in.dirty.spans) == 0 && in.wb.empty() {
		c.clear(in)
	}
}

// Drop discards k's dirty data without writing it (the file was deleted).
func (c *Cache) Drop(k ondisk.InodeRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in := c.inodes[k]; in != nil {
		c.dirty -= in.dirty.bytes
		c.pending.Add(-in.dirty.bytes - in.wb.bytes())
		in.dirty.take()
		in.wb.batches = nil
		c.recount(in)
		c.clear(in)
		delete(c.inodes, k)
	}
}

// Fsync writes back k's dirty data. The caller keeps readers of "disk +
// dirty" out for the whole call (or uses FsyncEach).
func (c *Cache) Fsync(k ondisk.InodeRef) error { return c.FsyncEach(k, noLock{}) }

// Sync writes back every inode on the writeback list — and only those:
// clean cached inodes are never visited (as the kernel's wait_sb_inodes
// walks only s_inodes_wb). The caller keeps readers out for the whole
// call (or uses SyncEach).
func (c *Cache) Sync() error { return c.SyncEach(noLock{}) }

// noLock is the lock of callers that already hold theirs.
type noLock struct{}

func (noLock) Lock()   {}
func (noLock) Unlock() {}

// Pending is the bytes the cache holds: dirty, and handed to writeback
// but not yet written (the kernel's dirty limit counts both, NR_DIRTY and
// NR_WRITEBACK). It takes no lock.
func (c *Cache) Pending() int64 { return c.pending.Load() }

// Stats returns a snapshot of the counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.CachedInodes = len(c.inodes)
	s.DirtyBytes = c.dirty
	for in := c.head.next; in != &c.head; in = in.next {
		s.DirtyInodes++
	}
	return s
}

// DirtyBlocksFrom is the bytes of the blockSize blocks at or beyond from
// that k's dirty or in-flight data touches: what a stat counts for data
// not yet written back past the on-disk size (btrfs_getattr adds the
// delalloc bytes, rounded to blocks; a hole skipped over takes none).
func (c *Cache) DirtyBlocksFrom(k ondisk.InodeRef, from, blockSize int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := c.inodes[k]
	if in == nil || blockSize <= 0 {
		return 0
	}
	return in.blocksFrom(from, blockSize)
}

// PendingBlocks is the bytes of the blockSize blocks that dirty or
// in-flight data of every inode touches: what their writeback allocates at
// most (uncompressed), which is what data space reservations must cover.
func (c *Cache) PendingBlocks(blockSize int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for in := c.head.next; in != &c.head; in = in.next {
		n += in.blocksFrom(0, blockSize)
	}
	return n
}

// blocksFrom is DirtyBlocksFrom of in. Cache.mu is held.
func (in *Inode) blocksFrom(from, blockSize int64) int64 {
	var blocks [][2]int64
	add := func(spans []span) {
		for _, s := range spans {
			if s.end() <= from {
				continue
			}
			b := max(s.off, from) / blockSize
			e := (s.end() + blockSize - 1) / blockSize
			blocks = append(blocks, [2]int64{b, e})
		}
	}
	add(in.dirty.spans)
	for _, b := range in.wb.batches {
		add(b)
	}
	sort.Slice(blocks, func(i, j int) bool { return blocks[i][0] < blocks[j][0] })
	var n, end int64
	for _, r := range blocks {
		if r[0] < end {
			r[0] = end
		}
		if r[1] > r[0] {
			n += r[1] - r[0]
			end = r[1]
		}
	}
	return n * blockSize
}
