package fileread

import (
	"container/list"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// decompCacheEntries bounds the decompressed extents kept (each at most
// 128 KiB as the kernel writes them), so that reading a compressed file in
// small pieces inflates each extent once.
const decompCacheEntries = 32

type decompKey struct {
	bytenr ondisk.LogicalAddr
	disk   uint64
	ram    uint64
	algo   uint8
}

type decompCache struct {
	mu  sync.Mutex
	max int
	m   map[decompKey]*list.Element
	lru *list.List
}

type decompEntry struct {
	key  decompKey
	data []byte
}

func newDecompCache(n int) *decompCache {
	return &decompCache{max: n, m: map[decompKey]*list.Element{}, lru: list.New()}
}

func (c *decompCache) get(k decompKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*decompEntry).data
	}
	return nil
}

func (c *decompCache) put(k decompKey, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[k]; ok {
		c.lru.MoveToFront(el)
		return
	}
	c.m[k] = c.lru.PushFront(&decompEntry{k, data})
	for c.lru.Len() > c.max {
		el := c.lru.Back()
		c.lru.Remove(el)
		delete(c.m, el.Value.(*decompEntry).key)
	}
}
