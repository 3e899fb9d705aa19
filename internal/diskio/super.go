package diskio

import (
	"encoding/binary"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// ReadSuperAt reads and validates the superblock copy at off.
func ReadSuperAt(dev blockdev.Device, off ondisk.PhysicalAddr) (*ondisk.Superblock, error) {
	buf := make([]byte, ondisk.SuperInfoSize)
	if int64(off)+ondisk.SuperInfoSize > dev.Size() {
		return nil, fmt.Errorf("superblock at %d: beyond device end (%d bytes)", off, dev.Size())
	}
	if _, err := dev.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("superblock at %d: %w", off, err)
	}
	sb, err := ondisk.DecodeSuperblock(buf)
	if err != nil {
		return nil, err
	}
	if sb.Magic != ondisk.SuperMagic {
		return nil, fmt.Errorf("superblock at %d: bad magic %#x: %w", off, sb.Magic, ErrCorrupt)
	}
	ct := csum.Type(sb.CsumType)
	if !ct.Valid() {
		return nil, fmt.Errorf("superblock at %d: unknown csum type %d: %w", off, sb.CsumType, ErrCorrupt)
	}
	if !ct.VerifyBlock(buf) {
		return nil, fmt.Errorf("superblock at %d: %s checksum mismatch: %w", off, ct, ErrCorrupt)
	}
	if sb.Bytenr != off {
		return nil, fmt.Errorf("superblock at %d: bytenr field says %d: %w", off, sb.Bytenr, ErrCorrupt)
	}
	if err := validateSuper(sb); err != nil {
		return nil, fmt.Errorf("superblock at %d: %w", off, err)
	}
	return sb, nil
}

func isPow2(v uint32) bool { return v != 0 && v&(v-1) == 0 }

// validateSuper mirrors the kernel's btrfs_validate_super for what a reader depends on.
func validateSuper(sb *ondisk.Superblock) error {
	if !isPow2(sb.SectorSize) || sb.SectorSize < 4096 || sb.SectorSize > 65536 {
		return corruptf("invalid sectorsize %d", sb.SectorSize)
	}
	if !isPow2(sb.NodeSize) || sb.NodeSize < sb.SectorSize || sb.NodeSize > 65536 {
		return corruptf("invalid nodesize %d", sb.NodeSize)
	}
	if sb.RootLevel >= ondisk.MaxLevel || sb.ChunkRootLevel >= ondisk.MaxLevel || sb.LogRootLevel >= ondisk.MaxLevel {
		return corruptf("invalid root levels %d/%d/%d", sb.RootLevel, sb.ChunkRootLevel, sb.LogRootLevel)
	}
	for _, a := range []ondisk.LogicalAddr{sb.Root, sb.ChunkRoot, sb.LogRoot} {
		if uint64(a)%uint64(sb.SectorSize) != 0 {
			return corruptf("root address %d not aligned to sectorsize %d", a, sb.SectorSize)
		}
	}
	if sb.SysChunkArraySize > ondisk.SysChunkArraySize {
		return corruptf("sys_chunk_array_size %d too large", sb.SysChunkArraySize)
	}
	if sb.NumDevices == 0 {
		return corruptf("num_devices is 0")
	}
	return nil
}

// SuperResult is the superblock chosen to open an image, and from where.
type SuperResult struct {
	Super  *ondisk.Superblock
	Mirror int // 0 = primary
	// Warning is non-empty when a mirror was used, saying why.
	Warning string
}

// ReadSuper returns the primary superblock, or when the primary is unreadable
// or fails its checks, the valid mirror with the highest generation (as
// btrfs-progs' -s would), with a warning. mirror >= 0 forces that copy.
func ReadSuper(dev blockdev.Device, mirror int) (*SuperResult, error) {
	if mirror >= 0 {
		if mirror >= len(ondisk.SuperMirrorOffsets) {
			return nil, fmt.Errorf("superblock mirror %d: only 0..%d exist", mirror, len(ondisk.SuperMirrorOffsets)-1)
		}
		sb, err := ReadSuperAt(dev, ondisk.SuperMirrorOffsets[mirror])
		if err != nil {
			if !anyMagic(dev) {
				return nil, fmt.Errorf("%w: %w", ErrNotBtrfs, err)
			}
			return nil, err
		}
		return &SuperResult{Super: sb, Mirror: mirror}, nil
	}
	primary, perr := ReadSuperAt(dev, ondisk.SuperMirrorOffsets[0])
	if perr == nil {
		return &SuperResult{Super: primary}, nil
	}
	var best *SuperResult
	for i := 1; i < len(ondisk.SuperMirrorOffsets); i++ {
		sb, err := ReadSuperAt(dev, ondisk.SuperMirrorOffsets[i])
		if err != nil {
			continue
		}
		if best == nil || sb.Generation > best.Super.Generation {
			best = &SuperResult{Super: sb, Mirror: i}
		}
	}
	if best == nil {
		if !anyMagic(dev) {
			return nil, fmt.Errorf("%w: primary: %w", ErrNotBtrfs, perr)
		}
		return nil, fmt.Errorf("no valid superblock: primary: %w", perr)
	}
	best.Warning = fmt.Sprintf("primary superblock unusable (%v); using mirror %d at %d (generation %d)",
		perr, best.Mirror, ondisk.SuperMirrorOffsets[best.Mirror], best.Super.Generation)
	return best, nil
}

// anyMagic reports whether any superblock copy on dev carries the btrfs
// magic, valid or not: a device where none does is not btrfs at all
// (ErrNotBtrfs) rather than a damaged one.
func anyMagic(dev blockdev.Device) bool {
	var b [8]byte
	for _, off := range ondisk.SuperMirrorOffsets {
		at := int64(off) + 0x40
		if at+8 > dev.Size() {
			break
		}
		if _, err := dev.ReadAt(b[:], at); err == nil && binary.LittleEndian.Uint64(b[:]) == ondisk.SuperMagic {
			return true
		}
	}
	return false
}
