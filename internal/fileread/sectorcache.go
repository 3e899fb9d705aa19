package fileread

import (
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// sectorCacheEntries is how many verified sectors the small-read cache holds.
const sectorCacheEntries = 64

// sectorCache keeps the last verified sectors read for sub-sector requests,
// so that a reader going byte by byte through a file reads and checksums
// each sector once rather than once per byte. Entries are replaced round-robin.
type sectorCache struct {
	mu   sync.Mutex
	idx  map[ondisk.LogicalAddr]int
	keys []ondisk.LogicalAddr
	data [][]byte
	next int
}

func newSectorCache() *sectorCache {
	return &sectorCache{idx: map[ondisk.LogicalAddr]int{}}
}

// get copies sector addr's bytes from rel into p and reports whether it was cached.
func (c *sectorCache) get(addr ondisk.LogicalAddr, rel int, p []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.idx[addr]
	if !ok {
		return false
	}
	copy(p, c.data[i][rel:])
	return true
}

func (c *sectorCache) put(addr ondisk.LogicalAddr, sector []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.idx[addr]; ok {
		return
	}
	if len(c.keys) < sectorCacheEntries {
		c.idx[addr] = len(c.keys)
		c.keys = append(c.keys, addr)
		c.data = append(c.data, append([]byte(nil), sector...))
		return
	}
	i := c.next
	c.next = (c.next + 1) % sectorCacheEntries
	delete(c.idx, c.keys[i])
	c.keys[i] = addr
	c.data[i] = append(c.data[i][:0], sector...)
	c.idx[addr] = i
}
