// Package volume maps btrfs logical addresses to device offsets through the
// chunk tree (bootstrapped from the superblock's sys_chunk_array).
package volume

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// ErrUnmapped is returned for a logical address no chunk covers.
var ErrUnmapped = errors.New("logical address not mapped by any chunk")

// Mapping is one chunk: a logical range and its stripes.
type Mapping struct {
	Logical ondisk.LogicalAddr
	Chunk   ondisk.Chunk
}

// End is the first logical address after the chunk.
func (m *Mapping) End() ondisk.LogicalAddr { return m.Logical + ondisk.LogicalAddr(m.Chunk.Length) }

// Copy is one place a logical range is stored.
type Copy struct {
	DevID    ondisk.DevID
	Physical ondisk.PhysicalAddr
}

// ChunkMap is the set of chunks, sorted by logical address. Safe for concurrent use.
type ChunkMap struct {
	mu     sync.RWMutex
	chunks []Mapping
}

// Insert adds or replaces the chunk at logical.
func (cm *ChunkMap) Insert(logical ondisk.LogicalAddr, c ondisk.Chunk) error {
	if c.Length == 0 {
		return fmt.Errorf("chunk at %d: zero length", logical)
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	i := sort.Search(len(cm.chunks), func(i int) bool { return cm.chunks[i].Logical >= logical })
	if i < len(cm.chunks) && cm.chunks[i].Logical == logical {
		cm.chunks[i].Chunk = c
		return nil
	}
	m := Mapping{logical, c}
	if i > 0 && cm.chunks[i-1].End() > logical {
		return fmt.Errorf("chunk at %d overlaps chunk at %d", logical, cm.chunks[i-1].Logical)
	}
	if i < len(cm.chunks) && m.End() > cm.chunks[i].Logical {
		return fmt.Errorf("chunk at %d overlaps chunk at %d", logical, cm.chunks[i].Logical)
	}
	cm.chunks = append(cm.chunks, Mapping{})
	copy(cm.chunks[i+1:], cm.chunks[i:])
	cm.chunks[i] = m
	return nil
}

// Remove deletes the chunk starting at logical.
func (cm *ChunkMap) Remove(logical ondisk.LogicalAddr) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	for i := range cm.chunks {
		if cm.chunks[i].Logical == logical {
			cm.chunks = append(cm.chunks[:i], cm.chunks[i+1:]...)
			return
		}
	}
}

// Lookup returns the chunk containing logical.
func (cm *ChunkMap) Lookup(logical ondisk.LogicalAddr) (Mapping, bool) {
	cm.mu.RLock()
	defer cm.mu.RUnlock()
	i := sort.Search(len(cm.chunks), func(i int) bool { return cm.chunks[i].End() > logical })
	if i < len(cm.chunks) && cm.chunks[i].Logical <= logical {
		return cm.chunks[i], true
	}
	return Mapping{}, false
}

// All returns a copy of all chunks in logical order.
func (cm *ChunkMap) All() []Mapping {
	cm.mu.RLock()
	defer cm.mu.RUnlock()
	return append([]Mapping(nil), cm.chunks...)
}

// Map returns every copy of [logical, logical+length). The range must lie in
// one stripe element (true for tree blocks and for sector-sized data reads);
// it returns the contiguous length available from that point.
// mirrors btrfs_map_block for the read path.
func (cm *ChunkMap) Map(logical ondisk.LogicalAddr, length uint64) ([]Copy, uint64, error) {
	m, ok := cm.Lookup(logical)
	if !ok {
		return nil, 0, fmt.Errorf("map %d: %w", logical, ErrUnmapped)
	}
	c := &m.Chunk
	off := uint64(logical - m.Logical)
	avail := c.Length - off
	profile := c.Type & ondisk.BlockGroupProfileMask
	switch {
	case profile == 0 || profile&(ondisk.BlockGroupDup|ondisk.BlockGroupRaid1|ondisk.BlockGroupRaid1C3|ondisk.BlockGroupRaid1C4) != 0:
		copies := make([]Copy, len(c.Stripes))
		for i, s := range c.Stripes {
			copies[i] = Copy{s.DevID, s.Offset + ondisk.PhysicalAddr(off)}
		}
		if profile == 0 {
			copies = copies[:1]
		}
		return copies, min(avail, length), nil
	case profile&(ondisk.BlockGroupRaid0|ondisk.BlockGroupRaid10) != 0:
		sl := c.StripeLen
		if sl == 0 {
			return nil, 0, fmt.Errorf("map %d: chunk at %d has zero stripe_len", logical, m.Logical)
		}
		sub := 1
		if profile&ondisk.BlockGroupRaid10 != 0 {
			sub = int(max(c.SubStripes, 1))
		}
		groups := len(c.Stripes) / sub
		if groups == 0 {
			return nil, 0, fmt.Errorf("map %d: chunk at %d has too few stripes", logical, m.Logical)
		}
		nr := off / sl
		inStripe := off % sl
		g := int(nr % uint64(groups))
		row := nr / uint64(groups)
		phys := row*sl + inStripe
		var copies []Copy
		for k := 0; k < sub; k++ {
			s := c.Stripes[g*sub+k]
			copies = append(copies, Copy{s.DevID, s.Offset + ondisk.PhysicalAddr(phys)})
		}
		return copies, min(length, sl-inStripe, avail), nil
	}
	return nil, 0, fmt.Errorf("map %d: chunk at %d: unsupported profile %#x (RAID5/6)", logical, m.Logical, profile)
}
