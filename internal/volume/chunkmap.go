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

// Copy is one place a logical range is stored. A RAID5/6 chunk has a
// second copy that is not stored but rebuilt: the XOR of Rebuild (the
// other data stripes of the row and its P stripe); DevID and Physical then
// name the data stripe it stands for. (Writers never see one: RAID5/6 is
// read-only here.)
type Copy struct {
	DevID    ondisk.DevID
	Physical ondisk.PhysicalAddr
	Rebuild  []Copy
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
			copies[i] = Copy{DevID: s.DevID, Physical: s.Offset + ondisk.PhysicalAddr(off)}
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
			copies = append(copies, Copy{DevID: s.DevID, Physical: s.Offset + ondisk.PhysicalAddr(phys)})
		}
		return copies, min(length, sl-inStripe, avail), nil
	case profile&(ondisk.BlockGroupRaid5|ondisk.BlockGroupRaid6) != 0:
		return mapRaid56(m, off, length)
	}
	return nil, 0, fmt.Errorf("map %d: chunk at %d: unsupported profile %#x", logical, m.Logical, profile)
}

// mapRaid56 maps off (in chunk m) of a RAID5/6 chunk: the data stripe that
// holds it and, as a second copy, its rebuild from the row's other data
// stripes and P. The parity rotates by one device per row (full stripe).
// mirrors __btrfs_map_block's RAID56 branch (mirror 1 = data, 2 = P rebuild)
func mapRaid56(m Mapping, off, length uint64) ([]Copy, uint64, error) {
	c := &m.Chunk
	nparity := 1
	if c.Type&ondisk.BlockGroupRaid6 != 0 {
		nparity = 2
	}
	n := len(c.Stripes)
	ndata := n - nparity
	sl := c.StripeLen
	if ndata < 1 || sl == 0 {
		return nil, 0, fmt.Errorf("map %d: RAID5/6 chunk at %d has %d stripes, stripe_len %d", uint64(m.Logical)+off, m.Logical, n, sl)
	}
	nr, in := off/sl, off%sl
	d, row := nr%uint64(ndata), nr/uint64(ndata)
	phys := ondisk.PhysicalAddr(row*sl + in)
	at := func(k uint64) Copy {
		s := c.Stripes[(row+k)%uint64(n)]
		return Copy{DevID: s.DevID, Physical: s.Offset + phys}
	}
	data := at(d)
	rebuild := Copy{DevID: data.DevID, Physical: data.Physical}
	for k := uint64(0); k <= uint64(ndata); k++ { // the data stripes, then P at ndata
		if k != d {
			rebuild.Rebuild = append(rebuild.Rebuild, at(k))
		}
	}
	return []Copy{data, rebuild}, min(length, sl-in, c.Length-off), nil
}
