// Package extentmap caches each inode's file extent mappings in memory (the
// kernel's extent_map.c, and ext4's extent status cache).
//
// An entry is a whole extent exactly as stored, one per EXTENT_DATA item (or
// one per implicit hole between items), never the request-sized piece a
// lookup asked for: ten thousand 4 KiB reads of a file stored as one extent
// leave one entry, and every later lookup inside it is a hit. (ext4 learned
// this the hard way: caching the piece each request mapped fragmented its
// cache into thousands of entries for a one-extent file.)
//
// Memory is bounded across all inodes: entries sit on one LRU list and the
// least recently used are dropped when the byte budget is exceeded.
package extentmap

import (
	"container/list"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Kind says how an extent's bytes are stored.
type Kind uint8

const (
	Hole     Kind = iota // no data: an implicit hole or an extent with disk_bytenr 0
	Inline               // data inside the EXTENT_DATA item
	Regular              // data in a disk extent
	Prealloc             // allocated but never written: reads as zeros
)

func (k Kind) String() string {
	switch k {
	case Hole:
		return "hole"
	case Inline:
		return "inline"
	case Regular:
		return "regular"
	case Prealloc:
		return "prealloc"
	}
	return "unknown"
}

// Extent maps file bytes [Start, End) of one inode.
type Extent struct {
	Start, End uint64
	Kind       Kind
	// Compression is the btrfs compression type (0 none, 1 zlib, 2 lzo, 3 zstd).
	Compression uint8
	// DiskBytenr, DiskNumBytes, Offset and RAMBytes are as stored in the
	// EXTENT_DATA item: file offset Start is byte Offset of the (decompressed)
	// disk extent.
	DiskBytenr   ondisk.LogicalAddr
	DiskNumBytes uint64
	Offset       uint64
	RAMBytes     uint64
	// Inline holds an inline extent's data as stored (possibly compressed).
	Inline []byte
	// Generation is the transaction that wrote the extent.
	Generation uint64
}

// Contains reports whether file offset off lies in the extent.
func (e *Extent) Contains(off uint64) bool { return off >= e.Start && off < e.End }

// entryOverhead approximates the memory of one entry besides inline data:
// the Extent, its list element and its slot in the inode's index.
const entryOverhead = 160

func (e *Extent) cost() int64 { return entryOverhead + int64(len(e.Inline)) }

type entry struct {
	id  ondisk.InodeRef
	ext Extent
	el  *list.Element
}

// inodeMap is one inode's entries sorted by Start, non-overlapping.
type inodeMap struct {
	entries []*entry
}

// find returns the index of the entry containing off, or -1.
func (m *inodeMap) find(off uint64) int {
	i := sort.Search(len(m.entries), func(i int) bool { return m.entries[i].ext.End > off })
	if i < len(m.entries) && m.entries[i].ext.Start <= off {
		return i
	}
	return -1
}

// Cache is the extent mapping cache shared by all inodes of a filesystem.
// Safe for concurrent use.
type Cache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	count    int
	inodes   map[ondisk.InodeRef]*inodeMap
	lru      *list.List // front = most recently used; values are *entry

	hits, misses, evictions atomic.Int64
}

// DefaultBytes is the budget used when New is given 0.
const DefaultBytes = 16 << 20

// New returns a cache holding at most maxBytes of mappings (DefaultBytes if 0).
func New(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultBytes
	}
	return &Cache{maxBytes: maxBytes, inodes: map[ondisk.InodeRef]*inodeMap{}, lru: list.New()}
}

// Lookup returns the cached extent of id containing off, counting a hit or a miss.
func (c *Cache) Lookup(id ondisk.InodeRef, off uint64) (Extent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.inodes[id]; m != nil {
		if i := m.find(off); i >= 0 {
			e := m.entries[i]
			c.lru.MoveToFront(e.el)
			c.hits.Add(1)
			return e.ext, true
		}
	}
	c.misses.Add(1)
	return Extent{}, false
}

// Insert caches extents of id. An extent overlapping cached ones replaces
// them (the on-disk map is the truth; a reader racing another may insert the
// same extent twice, which leaves one entry).
func (c *Cache) Insert(id ondisk.InodeRef, exts ...Extent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.inodes[id]
	if m == nil {
		m = &inodeMap{}
		c.inodes[id] = m
	}
	for _, x := range exts {
		if x.End <= x.Start {
			continue
		}
		c.insertLocked(id, m, x)
	}
	c.evictLocked()
}

func (c *Cache) insertLocked(id ondisk.InodeRef, m *inodeMap, x Extent) {
	// first entry ending after x.Start
	i := sort.Search(len(m.entries), func(i int) bool { return m.entries[i].ext.End > x.Start })
	j := i
	for j < len(m.entries) && m.entries[j].ext.Start < x.End {
		j++
	}
	if j == i+1 && m.entries[i].ext.Start == x.Start && m.entries[i].ext.End == x.End {
		m.entries[i].ext = x // same extent again: refresh in place
		c.lru.MoveToFront(m.entries[i].el)
		return
	}
	for _, old := range m.entries[i:j] {
		c.dropLocked(old)
	}
	e := &entry{id: id, ext: x}
	e.el = c.lru.PushFront(e)
	c.bytes += x.cost()
	c.count++
	m.entries = append(m.entries[:i], append([]*entry{e}, m.entries[j:]...)...)
}

// dropLocked removes e from the LRU and the counters (not from its inode's slice).
func (c *Cache) dropLocked(e *entry) {
	c.lru.Remove(e.el)
	c.bytes -= e.ext.cost()
	c.count--
}

// evictLocked drops least recently used entries until within budget.
func (c *Cache) evictLocked() {
	for c.bytes > c.maxBytes && c.lru.Len() > 0 {
		e := c.lru.Back().Value.(*entry)
		c.dropLocked(e)
		c.evictions.Add(1)
		m := c.inodes[e.id]
		if i := m.find(e.ext.Start); i >= 0 && m.entries[i] == e {
			m.entries = append(m.entries[:i], m.entries[i+1:]...)
		}
		if len(m.entries) == 0 {
			delete(c.inodes, e.id)
		}
	}
}

// Drop forgets every mapping of id (the writer calls it when the file changes).
func (c *Cache) Drop(id ondisk.InodeRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.inodes[id]
	if m == nil {
		return
	}
	for _, e := range m.entries {
		c.dropLocked(e)
	}
	delete(c.inodes, id)
}

// Stats is a snapshot of the cache's counters.
type Stats struct {
	Inodes    int   // inodes with at least one entry
	Entries   int   // entries over all inodes
	Bytes     int64 // estimated memory held
	MaxBytes  int64 // budget
	Hits      int64
	Misses    int64
	Evictions int64
}

// Stats returns the current counters.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Inodes: len(c.inodes), Entries: c.count, Bytes: c.bytes, MaxBytes: c.maxBytes,
		Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load()}
}

// Entries returns how many extents of id are cached.
func (c *Cache) Entries(id ondisk.InodeRef) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.inodes[id]; m != nil {
		return len(m.entries)
	}
	return 0
}

// InodeEntries returns the entry count of every cached inode.
func (c *Cache) InodeEntries() map[ondisk.InodeRef]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[ondisk.InodeRef]int, len(c.inodes))
	for id, m := range c.inodes {
		out[id] = len(m.entries)
	}
	return out
}
