package mkfs

import (
	"fmt"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// chunk is one chunk (and block group) of the new filesystem.
type chunk struct {
	Logical ondisk.LogicalAddr
	Length  uint64
	Type    uint64                // BlockGroupSystem|BlockGroupDup, ...
	Stripes []ondisk.PhysicalAddr // one device offset per copy; each Length long
}

func (c *chunk) end() ondisk.LogicalAddr { return c.Logical + ondisk.LogicalAddr(c.Length) }

// devExtent is one DEV_EXTENT: a stripe of a chunk on device 1.
type devExtent struct {
	Physical ondisk.PhysicalAddr
	Length   uint64
	Chunk    ondisk.LogicalAddr
}

// chunkPlan replays mkfs.btrfs 6.2's chunk allocations on one device so
// that the chunks land where mkfs.btrfs puts them for the same size:
//
//  1. make_btrfs: a temporary 4 MiB single SYSTEM chunk at 1 MiB;
//  2. create_metadata_block_groups / create_data_block_groups: one single
//     METADATA and one single DATA chunk (8 MiB each unless the device is
//     under 80 MiB);
//  3. create_raid_groups: for DUP metadata, a SYSTEM|DUP and a
//     METADATA|DUP chunk (single data needs no new chunk);
//  4. cleanup_temp_chunks: the empty chunks whose profile differs from the
//     one asked for are removed, leaving holes on the device.
type chunkPlan struct {
	total   uint64
	chunks  []chunk     // in logical order
	extents []devExtent // in physical order
}

func planChunks(p *params) (*chunkPlan, error) {
	pl := &chunkPlan{total: p.totalBytes}
	if pl.total < reservedStart+tempSystemChunkSize {
		return nil, fmt.Errorf("device too small: %d bytes", pl.total)
	}
	pl.add(chunk{Logical: reservedStart, Length: tempSystemChunkSize, Type: ondisk.BlockGroupSystem,
		Stripes: []ondisk.PhysicalAddr{reservedStart}})
	steps := []uint64{ondisk.BlockGroupMetadata, ondisk.BlockGroupData}
	if p.metaProfile != 0 {
		steps = append(steps, ondisk.BlockGroupSystem|p.metaProfile, ondisk.BlockGroupMetadata|p.metaProfile)
	}
	if p.dataProfile != 0 {
		steps = append(steps, ondisk.BlockGroupData|p.dataProfile)
	}
	if p.mixed() {
		steps = mixedSteps(p.metaProfile)
	}
	for _, typ := range steps {
		if err := pl.alloc(typ); err != nil {
			return nil, err
		}
	}
	pl.removeTemporary(p.metaProfile, p.dataProfile)
	return pl, nil
}

func (pl *chunkPlan) add(c chunk) {
	pl.chunks = append(pl.chunks, c)
	for _, s := range c.Stripes {
		pl.extents = append(pl.extents, devExtent{Physical: s, Length: c.Length, Chunk: c.Logical})
	}
	sort.Slice(pl.extents, func(i, j int) bool { return pl.extents[i].Physical < pl.extents[j].Physical })
}

// avail is the unallocated space from 1 MiB to the end. mirrors btrfs_device_avail_bytes
func (pl *chunkPlan) avail() uint64 {
	used := uint64(0)
	for _, e := range pl.extents {
		used += e.Length
	}
	return pl.total - reservedStart - used
}

// firstFit finds the first hole of size bytes from 1 MiB. mirrors find_free_dev_extent_start
func (pl *chunkPlan) firstFit(size uint64) (ondisk.PhysicalAddr, bool) {
	pos := uint64(reservedStart)
	for _, e := range pl.extents {
		if uint64(e.Physical) >= pos+size {
			return ondisk.PhysicalAddr(pos), true
		}
		pos = max(pos, uint64(e.Physical)+e.Length)
	}
	if pos+size <= pl.total {
		return ondisk.PhysicalAddr(pos), true
	}
	return 0, false
}

// alloc adds one chunk of type typ. mirrors btrfs_alloc_chunk with the
// regular policy on a single device (init_alloc_chunk_ctl_policy_regular,
// decide_stripe_size_regular)
func (pl *chunkPlan) alloc(typ uint64) error {
	numStripes := uint64(1)
	if typ&ondisk.BlockGroupDup != 0 {
		numStripes = 2
	}
	stripe, minStripe, maxChunk := uint64(8*mib), uint64(1*mib), uint64(32*mib)
	if typ&ondisk.BlockGroupProfileMask != 0 {
		switch {
		case typ&ondisk.BlockGroupSystem != 0:
			stripe, maxChunk, minStripe = 8*mib, 16*mib, 1*mib
		case typ&ondisk.BlockGroupData != 0:
			stripe, maxChunk, minStripe = 1<<30, 10<<30, 64*mib
		case typ&ondisk.BlockGroupMetadata != 0:
			maxChunk = 256 * mib
			if pl.total > 50<<30 {
				maxChunk = 1 << 30
			}
			stripe, minStripe = maxChunk, 32*mib
		}
	}
	maxChunk = min(pl.total/10, maxChunk) // no chunk over 10% of the filesystem
	looped := false
	for {
		// chunk_bytes_by_type is the stripe size for single and DUP alike.
		if stripe > maxChunk {
			stripe = roundDown(maxChunk/numStripes, stripeLen)
		}
		stripe = roundDown(max(stripe, minStripe), stripeLen)
		avail := pl.avail()
		if avail >= stripe*numStripes {
			break
		}
		if looped || avail == 0 {
			return pl.noSpace(typ)
		}
		looped = true
		stripe = avail / numStripes
	}
	c := chunk{Logical: pl.nextLogical(), Length: stripe, Type: typ}
	for i := uint64(0); i < numStripes; i++ {
		phys, ok := pl.firstFit(stripe)
		if !ok {
			return pl.noSpace(typ)
		}
		c.Stripes = append(c.Stripes, phys)
		// Reserve it now so that the second DUP stripe lands after the first.
		pl.extents = append(pl.extents, devExtent{Physical: phys, Length: stripe, Chunk: c.Logical})
		sort.Slice(pl.extents, func(i, j int) bool { return pl.extents[i].Physical < pl.extents[j].Physical })
	}
	pl.chunks = append(pl.chunks, c)
	return nil
}

func (pl *chunkPlan) noSpace(typ uint64) error {
	return fmt.Errorf("no space for a %s chunk in %d bytes", typeString(typ), pl.total)
}

// nextLogical is the end of the last chunk. mirrors find_next_chunk
func (pl *chunkPlan) nextLogical() ondisk.LogicalAddr {
	var end ondisk.LogicalAddr
	for i := range pl.chunks {
		end = max(end, pl.chunks[i].end())
	}
	return end
}

// removeTemporary drops the (empty) single chunks whose profile differs
// from the one asked for. mirrors cleanup_temp_chunks / is_temp_block_group
func (pl *chunkPlan) removeTemporary(metaProfile, dataProfile uint64) {
	keep := pl.chunks[:0]
	for _, c := range pl.chunks {
		want := metaProfile
		if c.Type&ondisk.BlockGroupData != 0 {
			want = dataProfile
		}
		if c.Type&ondisk.BlockGroupProfileMask != want {
			pl.dropExtents(c.Logical)
			continue
		}
		keep = append(keep, c)
	}
	pl.chunks = keep
	sort.Slice(pl.chunks, func(i, j int) bool { return pl.chunks[i].Logical < pl.chunks[j].Logical })
}

func (pl *chunkPlan) dropExtents(logical ondisk.LogicalAddr) {
	keep := pl.extents[:0]
	for _, e := range pl.extents {
		if e.Chunk != logical {
			keep = append(keep, e)
		}
	}
	pl.extents = keep
}

// bytesUsed is the sum of the dev extents (dev_item.bytes_used).
func (pl *chunkPlan) bytesUsed() uint64 {
	n := uint64(0)
	for _, e := range pl.extents {
		n += e.Length
	}
	return n
}

// find returns the chunk of the given type (system, metadata or data); a
// mixed DATA|METADATA chunk is both metadata and data.
func (pl *chunkPlan) find(kind uint64) *chunk {
	for i := range pl.chunks {
		if t := pl.chunks[i].Type & ondisk.BlockGroupTypeMask; t == kind || t == mixedType && kind&mixedType != 0 {
			return &pl.chunks[i]
		}
	}
	return nil
}

func roundDown(v, align uint64) uint64 { return v / align * align }

// typeString names a block group type like btrfs-progs: "METADATA|DUP".
func typeString(typ uint64) string {
	s := ""
	switch {
	case typ&ondisk.BlockGroupSystem != 0:
		s = "SYSTEM"
	case typ&ondisk.BlockGroupMetadata != 0 && typ&ondisk.BlockGroupData != 0:
		s = "DATA+METADATA"
	case typ&ondisk.BlockGroupMetadata != 0:
		s = "METADATA"
	case typ&ondisk.BlockGroupData != 0:
		s = "DATA"
	}
	if typ&ondisk.BlockGroupDup != 0 {
		return s + "|DUP"
	}
	return s + "|single"
}
