package check

import (
	"bytes"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// chunkRec is a CHUNK_ITEM of the chunk tree.
type chunkRec struct {
	logical uint64
	chunk   ondisk.Chunk
	raw     []byte // the item as stored, to compare with sys_chunk_array
	key     ondisk.Key
	leaf    ondisk.LogicalAddr
}

// chunkTreeItem records a chunk tree item, checking the chunk on its own.
// mirrors btrfs_check_chunk_valid
func (c *checker) chunkTreeItem(n *diskio.Node, k ondisk.Key, d []byte) {
	bad := func(format string, args ...any) {
		c.problem(ClassChunk, ondisk.ChunkTreeObjectID, n.Addr, keyp(k), format, args...)
	}
	switch k.Type {
	case ondisk.DevItemKey:
		di, err := item.DecodeDevItem(d)
		if err != nil {
			bad("%v", err)
			return
		}
		if uint64(di.DevID) != k.Offset {
			bad("dev item devid %d, key says %d", di.DevID, k.Offset)
		}
		c.devs = append(c.devs, devItemRec{dev: di, key: k, leaf: n.Addr})
	case ondisk.ChunkItemKey:
		ch, err := ondisk.DecodeChunk(d)
		if err != nil {
			bad("%v", err)
			return
		}
		if k.ObjectID != ondisk.FirstChunkTreeObjectID {
			bad("chunk item objectid %d, expected %d", k.ObjectID, ondisk.FirstChunkTreeObjectID)
		}
		if len(d) != ch.Size() {
			bad("chunk item of %d bytes, %d stripes need %d", len(d), ch.NumStripes, ch.Size())
		}
		c.checkChunkItem(&ch, bad)
		c.chunks = append(c.chunks, chunkRec{logical: k.Offset, chunk: ch, raw: append([]byte(nil), d...), key: k, leaf: n.Addr})
	default:
		bad("unexpected %s item in the chunk tree", k.Type)
	}
}

func (c *checker) checkChunkItem(ch *ondisk.Chunk, bad func(string, ...any)) {
	if ch.Length == 0 || ch.Length%c.sectorsize != 0 {
		bad("chunk length %d is zero or not aligned to sectorsize %d", ch.Length, c.sectorsize)
	}
	if ch.StripeLen != 64<<10 {
		bad("stripe_len %d, expected 65536", ch.StripeLen)
	}
	if ch.Owner != ondisk.ExtentTreeObjectID {
		bad("chunk owner %d, expected %d", ch.Owner, ondisk.ExtentTreeObjectID)
	}
	if ch.Type&ondisk.BlockGroupTypeMask == 0 {
		bad("chunk type %#x has no data/metadata/system bit", ch.Type)
	}
	n := int(ch.NumStripes)
	ok := true
	switch p := ch.Type & ondisk.BlockGroupProfileMask; p {
	case 0:
		ok = n == 1
	case ondisk.BlockGroupDup, ondisk.BlockGroupRaid1:
		ok = n == 2
	case ondisk.BlockGroupRaid1C3:
		ok = n == 3
	case ondisk.BlockGroupRaid1C4:
		ok = n == 4
	case ondisk.BlockGroupRaid0:
		ok = n >= 1
	case ondisk.BlockGroupRaid10:
		ok = n >= 2 && ch.SubStripes == 2 && n%2 == 0
	case ondisk.BlockGroupRaid5:
		ok = n >= 2
	case ondisk.BlockGroupRaid6:
		ok = n >= 3
	default:
		bad("chunk type %#x has more than one profile", ch.Type)
	}
	if !ok {
		bad("chunk type %#x with %d stripes", ch.Type, n)
	}
}

// stripeLength is the device length of each stripe of a chunk.
// mirrors calc_stripe_length
func stripeLength(ch *ondisk.Chunk) uint64 {
	n := uint64(ch.NumStripes)
	switch ch.Type & ondisk.BlockGroupProfileMask {
	case ondisk.BlockGroupRaid0:
		return ch.Length / n
	case ondisk.BlockGroupRaid10:
		return ch.Length * uint64(max(ch.SubStripes, 1)) / n
	case ondisk.BlockGroupRaid5:
		return ch.Length / max(n-1, 1)
	case ondisk.BlockGroupRaid6:
		return ch.Length / max(n-2, 1)
	}
	return ch.Length
}

// checkChunks cross-checks chunks, block groups, dev extents, dev items
// and the superblock's sys_chunk_array.
// mirrors check_chunks, check_dev_extents, check_devices
func (c *checker) checkChunks() {
	sort.Slice(c.dexts, func(i, j int) bool {
		a, b := &c.dexts[i], &c.dexts[j]
		return a.devid < b.devid || a.devid == b.devid && a.physical < b.physical
	})
	chunkAt := map[uint64]bool{}
	for i := range c.chunks {
		cr := &c.chunks[i]
		chunkAt[cr.logical] = true
		c.chunkBlockGroup(cr)
		c.chunkStripes(cr)
	}
	for i := range c.bgs {
		bg := &c.bgs[i]
		if !chunkAt[bg.start] {
			c.problem(ClassChunk, bg.tree, bg.leaf, keyp(bg.key), "block group [%d, %d) has no chunk", bg.start, bg.end())
		}
	}
	c.checkDevExtents()
	c.checkDevItems()
	c.checkSysChunkArray()
}

func (c *checker) chunkBlockGroup(cr *chunkRec) {
	bad := func(format string, args ...any) {
		c.problem(ClassChunk, ondisk.ChunkTreeObjectID, cr.leaf, keyp(cr.key), format, args...)
	}
	i := c.findBG(cr.logical)
	if i < 0 || c.bgs[i].start != cr.logical {
		bad("chunk [%d, %d) has no block group item", cr.logical, cr.logical+cr.chunk.Length)
		return
	}
	bg := &c.bgs[i]
	if bg.length != cr.chunk.Length || bg.flags != cr.chunk.Type {
		bad("chunk length %d type %#x, block group %v has length %d flags %#x", cr.chunk.Length, cr.chunk.Type, bg.key, bg.length, bg.flags)
	}
}

func (c *checker) chunkStripes(cr *chunkRec) {
	want := stripeLength(&cr.chunk)
	for si, s := range cr.chunk.Stripes {
		i := sort.Search(len(c.dexts), func(i int) bool {
			d := &c.dexts[i]
			return d.devid > uint64(s.DevID) || d.devid == uint64(s.DevID) && d.physical >= uint64(s.Offset)
		})
		if i >= len(c.dexts) || c.dexts[i].devid != uint64(s.DevID) || c.dexts[i].physical != uint64(s.Offset) {
			c.problem(ClassChunk, ondisk.ChunkTreeObjectID, cr.leaf, keyp(cr.key), "stripe %d (devid %d physical %d) has no dev extent",
				si, s.DevID, s.Offset)
			continue
		}
		d := &c.dexts[i]
		d.matched = true
		if d.chunkOffset != cr.logical || d.length != want {
			c.problem(ClassChunk, ondisk.DevTreeObjectID, d.leaf, keyp(d.key), "dev extent says chunk %d length %d; chunk %d stripe %d has length %d",
				d.chunkOffset, d.length, cr.logical, si, want)
		}
	}
}

// checkSysChunkArray compares sys_chunk_array with the SYSTEM chunks of
// the chunk tree.
func (c *checker) checkSysChunkArray() {
	sys, err := c.sb.SysChunks()
	if err != nil {
		c.problem(ClassSuper, 0, 0, nil, "sys_chunk_array: %v", err)
		return
	}
	inArray := map[uint64]bool{}
	for _, s := range sys {
		inArray[s.Key.Offset] = true
		raw := make([]byte, s.Chunk.Size())
		s.Chunk.Encode(raw)
		var found *chunkRec
		for i := range c.chunks {
			if c.chunks[i].logical == s.Key.Offset {
				found = &c.chunks[i]
			}
		}
		switch {
		case found == nil:
			c.problem(ClassSuper, 0, 0, keyp(s.Key), "sys_chunk_array chunk %d is not in the chunk tree", s.Key.Offset)
		case !bytes.Equal(found.raw, raw):
			c.problem(ClassSuper, 0, 0, keyp(s.Key), "sys_chunk_array chunk %d differs from the chunk tree's item", s.Key.Offset)
		case s.Chunk.Type&ondisk.BlockGroupSystem == 0:
			c.problem(ClassSuper, 0, 0, keyp(s.Key), "sys_chunk_array chunk %d is not a SYSTEM chunk (type %#x)", s.Key.Offset, s.Chunk.Type)
		}
	}
	for i := range c.chunks {
		cr := &c.chunks[i]
		if cr.chunk.Type&ondisk.BlockGroupSystem != 0 && !inArray[cr.logical] {
			c.problem(ClassChunk, ondisk.ChunkTreeObjectID, cr.leaf, keyp(cr.key), "SYSTEM chunk %d is missing from the superblock's sys_chunk_array", cr.logical)
		}
	}
}
