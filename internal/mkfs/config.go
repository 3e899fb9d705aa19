package mkfs

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/copyin"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Defaults, as mkfs.btrfs 6.x chooses them.
const (
	DefaultNodeSize   = 16384
	DefaultSectorSize = 4096
	MaxNodeSize       = 65536
	maxSectorSize     = 65536
	minSectorSize     = 4096
)

// Config says what filesystem Make builds. The zero value of every field
// means "the mkfs.btrfs default".
type Config struct {
	// Size is the filesystem size in bytes (rounded down to SectorSize);
	// 0 means the whole device.
	Size       uint64
	NodeSize   uint32 // default 16384
	SectorSize uint32 // default 4096
	Csum       csum.Type
	// MetadataProfile is "dup" (default on one device) or "single"; it also
	// sets the system chunk's profile, as mkfs.btrfs does.
	MetadataProfile string
	// DataProfile is "single" (the default).
	DataProfile string
	// Features are the on-disk feature flags; the zero value is
	// DefaultFeatures(). Build them with ParseFeatures.
	Features Features
	Label    string
	// FSID, DevUUID, ChunkTreeUUID and SubvolUUID (the FS tree's uuid) are
	// random when zero; set them for reproducible images.
	FSID          ondisk.UUID
	DevUUID       ondisk.UUID
	ChunkTreeUUID ondisk.UUID
	SubvolUUID    ondisk.UUID
	// Time stamps the root directories and the FS tree; zero means now.
	Time time.Time
	// Rootdir, when set, is copied into the new filesystem (internal/copyin).
	Rootdir string
	// RootdirProgress, when set, is told of each entry and byte Rootdir
	// copies (a progress bar).
	RootdirProgress copyin.Progress
	// Compress is the algorithm ("zlib", "lzo", "zstd", optionally ":LEVEL")
	// used for Rootdir's files; it needs Rootdir.
	Compress string
}

// params is a Config with every default filled in and every value checked.
type params struct {
	Config
	totalBytes  uint64
	metaProfile uint64 // BlockGroupDup or 0 (single)
	dataProfile uint64
	generation  ondisk.Generation
}

func (p *params) has(incompat uint64) bool   { return p.Features.Incompat&incompat != 0 }
func (p *params) mixed() bool                { return p.has(ondisk.IncompatMixedGroups) }
func (p *params) hasRO(compatRO uint64) bool { return p.Features.CompatRO&compatRO != 0 }
func (p *params) skinny() bool               { return p.has(ondisk.IncompatSkinnyMetadata) }
func (p *params) freeSpaceTree() bool        { return p.hasRO(ondisk.CompatROFreeSpaceTree) }
func (p *params) blockGroupTree() bool       { return p.hasRO(ondisk.CompatROBlockGroupTree) }

func isPow2(v uint32) bool { return v != 0 && v&(v-1) == 0 }

// ParseProfile turns "single" or "dup" into block group profile bits.
func ParseProfile(s string) (uint64, error) {
	switch strings.ToLower(s) {
	case "single":
		return 0, nil
	case "dup":
		return ondisk.BlockGroupDup, nil
	case "raid0", "raid1", "raid1c3", "raid1c4", "raid10", "raid5", "raid6":
		return 0, fmt.Errorf("profile %q needs several devices; gobtrfs mkfs makes single-device filesystems (use single or dup)", s)
	}
	return 0, fmt.Errorf("unknown profile %q (want single or dup)", s)
}

// resolve fills in defaults and validates cfg for a device of devSize bytes.
func resolve(cfg Config, devSize uint64) (*params, error) {
	p := &params{Config: cfg, generation: 1}
	if p.SectorSize == 0 {
		p.SectorSize = DefaultSectorSize
	}
	if !isPow2(p.SectorSize) || p.SectorSize < minSectorSize || p.SectorSize > maxSectorSize {
		return nil, fmt.Errorf("invalid sectorsize %d: must be a power of two from %d to %d",
			p.SectorSize, minSectorSize, maxSectorSize)
	}
	if p.Features == (Features{}) {
		p.Features = DefaultFeatures()
	}
	if err := p.Features.check(); err != nil {
		return nil, err
	}
	if p.NodeSize == 0 {
		p.NodeSize = max(DefaultNodeSize, p.SectorSize)
		if p.mixed() {
			p.NodeSize = p.SectorSize
		}
	}
	if err := CheckNodeSize(p.NodeSize, p.SectorSize); err != nil {
		return nil, err
	}
	if p.mixed() && p.NodeSize != p.SectorSize {
		return nil, fmt.Errorf("illegal nodesize %d (not equal to %d for mixed block group)", p.NodeSize, p.SectorSize)
	}
	if !p.Csum.Valid() {
		return nil, fmt.Errorf("unknown checksum type %d", uint16(p.Csum))
	}
	if err := p.resolveProfiles(); err != nil {
		return nil, err
	}
	if len(p.Label) >= ondisk.LabelSize {
		return nil, fmt.Errorf("label is %d bytes, at most %d allowed", len(p.Label), ondisk.LabelSize-1)
	}
	if p.Compress != "" && p.Rootdir == "" {
		return nil, fmt.Errorf("--compress only applies to files copied with --rootdir")
	}
	if err := p.resolveSize(devSize); err != nil {
		return nil, err
	}
	if p.Time.IsZero() {
		p.Time = time.Now()
	}
	for _, u := range []*ondisk.UUID{&p.FSID, &p.DevUUID, &p.ChunkTreeUUID, &p.SubvolUUID} {
		if u.IsZero() {
			*u = randomUUID()
		}
	}
	return p, nil
}

func (p *params) resolveProfiles() error {
	if p.mixed() {
		return p.resolveMixedProfiles()
	}
	if p.MetadataProfile == "" {
		p.MetadataProfile = "dup"
	}
	if p.DataProfile == "" {
		p.DataProfile = "single"
	}
	var err error
	if p.metaProfile, err = ParseProfile(p.MetadataProfile); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if p.dataProfile, err = ParseProfile(p.DataProfile); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if p.dataProfile != 0 {
		return fmt.Errorf("data profile %s is not supported yet (use single)", p.DataProfile)
	}
	return nil
}

func (p *params) resolveSize(devSize uint64) error {
	size := p.Size
	if size == 0 {
		size = devSize
	}
	if size > devSize {
		return fmt.Errorf("size %d is larger than the device (%d bytes)", size, devSize)
	}
	p.totalBytes = size / uint64(p.SectorSize) * uint64(p.SectorSize)
	min := MinSize(p.NodeSize, p.metaProfile, p.dataProfile)
	if p.mixed() {
		min = mixedMinSize(p.NodeSize)
	}
	if p.totalBytes < min {
		return &SizeError{Size: p.totalBytes, Min: min, Profile: p.MetadataProfile}
	}
	return nil
}

// CheckNodeSize reports whether nodesize suits sectorsize. mirrors btrfs_check_nodesize
func CheckNodeSize(nodesize, sectorsize uint32) error {
	switch {
	case !isPow2(nodesize):
		return fmt.Errorf("invalid nodesize %d: must be a power of two", nodesize)
	case nodesize < sectorsize:
		return fmt.Errorf("invalid nodesize %d: smaller than the sectorsize %d", nodesize, sectorsize)
	case nodesize > MaxNodeSize:
		return fmt.Errorf("invalid nodesize %d: larger than %d", nodesize, MaxNodeSize)
	}
	return nil
}

// SizeError is returned for a filesystem smaller than mkfs.btrfs allows.
type SizeError struct {
	Size, Min uint64
	Profile   string
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("size %s is too small: the minimum for metadata profile %s is %s",
		prettySize(e.Size), e.Profile, prettySize(e.Min))
}

func prettySize(n uint64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	}
	return fmt.Sprintf("%.2f MiB (%d bytes)", float64(n)/(1<<20), n)
}

func randomUUID() ondisk.UUID {
	var u ondisk.UUID
	if _, err := rand.Read(u[:]); err != nil {
		panic("mkfs: crypto/rand failed: " + err.Error())
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return u
}
