package blockgroup

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// superStripes returns the logical ranges of group g that hold superblock
// copies: the whole StripeLen stripe around each copy, and everything below
// the primary superblock's offset. mirrors exclude_super_stripes / btrfs_rmap_block
func superStripes(start ondisk.LogicalAddr, c *ondisk.Chunk) ([]Range, error) {
	var out []Range
	end := uint64(start) + c.Length
	if uint64(start) < uint64(ondisk.SuperMirrorOffsets[0]) {
		out = append(out, Range{uint64(start), min(end, uint64(ondisk.SuperMirrorOffsets[0]))})
	}
	profile := c.Type & ondisk.BlockGroupProfileMask
	linear := profile == 0 || profile&(ondisk.BlockGroupDup|ondisk.BlockGroupRaid1|
		ondisk.BlockGroupRaid1C3|ondisk.BlockGroupRaid1C4) != 0
	for _, sb := range ondisk.SuperMirrorOffsets {
		for _, s := range c.Stripes {
			var logical uint64
			switch {
			case linear:
				if sb < s.Offset || uint64(sb-s.Offset) >= c.Length {
					continue
				}
				logical = uint64(start) + roundDown(uint64(sb-s.Offset), StripeLen)
			case profile&ondisk.BlockGroupRaid0 != 0 && c.StripeLen > 0:
				n := uint64(len(c.Stripes))
				stripeLen := c.Length / n
				if sb < s.Offset || uint64(sb-s.Offset) >= stripeLen {
					continue
				}
				idx := uint64(0)
				for i := range c.Stripes {
					if c.Stripes[i] == s {
						idx = uint64(i)
					}
				}
				nr := uint64(sb-s.Offset) / c.StripeLen
				logical = uint64(start) + (nr*n+idx)*c.StripeLen
			default:
				return nil, fmt.Errorf("chunk at %d: profile %#x not supported for writing", uint64(start), profile)
			}
			out = append(out, Range{logical, min(logical+StripeLen, end)})
		}
	}
	return out, nil
}

// newGroup builds the in-memory group for a chunk with every byte free
// except superblock stripes; the caller then takes used extents out.
func (m *Manager) newGroup(start ondisk.LogicalAddr, c ondisk.Chunk) (*Group, error) {
	g := &Group{Start: start, Length: c.Length, Flags: c.Type, Chunk: c}
	g.free.Add(uint64(start), c.Length)
	sup, err := superStripes(start, &c)
	if err != nil {
		return nil, err
	}
	for _, r := range sup {
		g.super += g.free.Remove(r.Start, r.Len())
	}
	g.superR = sup
	return g, nil
}

// Chunk sizing, mirrors calc_chunk_size / decide_stripe_size_regular.
const (
	maxDataChunk   = 10 << 30
	maxMetaChunk   = 256 << 20
	maxMetaChunkLg = 1 << 30
	maxSysChunk    = 32 << 20
	maxStripe      = 1 << 30
	stripeRound    = 16 << 20
)

func (m *Manager) chunkLimits(kind uint64) (maxChunk, maxStripeSize uint64) {
	total := m.dev.Item.TotalBytes
	switch {
	case kind&ondisk.BlockGroupData != 0:
		maxChunk = maxDataChunk
	case kind&ondisk.BlockGroupSystem != 0:
		maxChunk = maxSysChunk
	case total > 50<<30:
		maxChunk = maxMetaChunkLg
	default:
		maxChunk = maxMetaChunk
	}
	maxStripeSize = min(maxChunk, maxStripe)
	maxChunk = min(maxChunk, total/10)
	return maxChunk, maxStripeSize
}

// AllocChunk creates a chunk and its block group for kind with profile
// (0 for single or BlockGroupDup) on the device's unallocated space. The
// group is usable at once; its chunk item, dev extents, block group item and
// free space info are inserted by CreatePending. mirrors btrfs_create_chunk
func (m *Manager) AllocChunk(kind, profile uint64, chunks *volume.ChunkMap) (*Group, error) {
	devStripes := uint64(1)
	if profile&ondisk.BlockGroupDup != 0 {
		devStripes = 2
	} else if profile != 0 {
		return nil, fmt.Errorf("allocate %s chunk: profile %#x not supported on one device", KindName(kind), profile)
	}
	maxChunk, maxStripeSize := m.chunkLimits(kind)
	phys, size, err := m.dev.take(maxStripeSize*devStripes, StripeLen*devStripes, StripeLen*devStripes)
	if err != nil {
		return nil, fmt.Errorf("allocate %s chunk: %w", KindName(kind), err)
	}
	stripe := min(size/devStripes, maxStripeSize)
	if stripe > maxChunk {
		stripe = min(roundUp(maxChunk, stripeRound), stripe)
	}
	stripe = roundDown(stripe, StripeLen)
	if stripe == 0 {
		return nil, fmt.Errorf("allocate %s chunk: %w", KindName(kind), ErrNoSpace)
	}
	logical := ondisk.LogicalAddr(0)
	for _, mp := range chunks.All() {
		logical = max(logical, mp.End())
	}
	if logical < DeviceReserved {
		logical = DeviceReserved
	}
	c := ondisk.Chunk{
		Length: stripe, Owner: ondisk.ExtentTreeObjectID, StripeLen: StripeLen, Type: kind | profile,
		IOAlign: StripeLen, IOWidth: StripeLen, SectorSize: m.sectorSize, NumStripes: uint16(devStripes), SubStripes: 1,
	}
	for i := uint64(0); i < devStripes; i++ {
		c.Stripes = append(c.Stripes, ondisk.Stripe{DevID: m.dev.Item.DevID,
			Offset: phys + ondisk.PhysicalAddr(i*stripe), DevUUID: m.dev.Item.UUID})
	}
	g, err := m.newGroup(logical, c)
	if err != nil {
		return nil, err
	}
	g.pending, g.needsFST, g.dirty = true, true, true
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := chunks.Insert(logical, c); err != nil {
		return nil, fmt.Errorf("allocate %s chunk: %w", KindName(kind), err)
	}
	if err := m.add(g); err != nil {
		chunks.Remove(logical)
		return nil, err
	}
	m.dev.commit(phys, stripe*devStripes)
	return g, nil
}

// TakePending returns the groups created in this transaction whose items
// are not inserted yet, and clears their mark.
func (m *Manager) TakePending() []*Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Group
	for _, g := range m.groups {
		if g.pending {
			g.pending = false
			out = append(out, g)
		}
	}
	return out
}

// TakeNeedsFST returns the groups with no free space info yet and clears the mark.
func (m *Manager) TakeNeedsFST() []*Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Group
	for _, g := range m.groups {
		if g.needsFST {
			g.needsFST = false
			out = append(out, g)
		}
	}
	return out
}

// NeedsFST reports (and clears) whether g still lacks its free space info.
func (m *Manager) NeedsFST(g *Group) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := g.needsFST
	g.needsFST = false
	return n
}

// Profile returns the profile of the existing groups of kind (0 = single),
// the one new chunks of that kind get.
func (m *Manager) Profile(kind uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		if g.IsType(kind) {
			return g.Flags & ondisk.BlockGroupProfileMask
		}
	}
	return 0
}
