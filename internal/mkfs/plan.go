package mkfs

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// ChunkInfo describes one chunk Make creates.
type ChunkInfo struct {
	Logical  ondisk.LogicalAddr
	Length   uint64
	Type     uint64 // block group type and profile flags
	Physical []ondisk.PhysicalAddr
}

// TypeString names the chunk's type like btrfs-progs ("METADATA|DUP").
func (c ChunkInfo) TypeString() string { return typeString(c.Type) }

// Resolved is a Config with its defaults filled in, as Make will use it.
type Resolved struct {
	Config
	TotalBytes uint64 // the filesystem size, rounded down to the sector size
	Chunks     []ChunkInfo
	MinSize    uint64
}

// Resolve checks cfg for a device of devSize bytes and returns it with every
// default filled in and the chunks Make would create. Random UUIDs and the
// time stay zero here; Make picks them.
func Resolve(cfg Config, devSize uint64) (*Resolved, error) {
	p, err := resolve(cfg, devSize)
	if err != nil {
		return nil, err
	}
	plan, err := planChunks(p)
	if err != nil {
		return nil, err
	}
	r := &Resolved{Config: cfg, TotalBytes: p.totalBytes, MinSize: MinSize(p.NodeSize, p.metaProfile, p.dataProfile)}
	if p.mixed() {
		r.MinSize = mixedMinSize(p.NodeSize)
	}
	r.NodeSize, r.SectorSize, r.Features = p.NodeSize, p.SectorSize, p.Features
	r.MetadataProfile, r.DataProfile = p.MetadataProfile, p.DataProfile
	for _, c := range plan.chunks {
		r.Chunks = append(r.Chunks, ChunkInfo{Logical: c.Logical, Length: c.Length, Type: c.Type,
			Physical: append([]ondisk.PhysicalAddr(nil), c.Stripes...)})
	}
	return r, nil
}

// RandomUUID returns a new random (version 4) UUID.
func RandomUUID() ondisk.UUID { return randomUUID() }
