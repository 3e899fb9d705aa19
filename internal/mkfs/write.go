package mkfs

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// wipeBytes is how much mkfs.btrfs zeroes at each end of the device to clear
// old signatures (partition tables, other filesystems, md superblocks).
const wipeBytes = 2 * mib

// write puts the image on dev: old signatures wiped, tree blocks (every
// copy), a flush, then the superblocks, then another flush.
func (im *image) write(dev blockdev.Device) error {
	if err := im.wipe(dev); err != nil {
		return err
	}
	for _, t := range im.trees {
		for i := range t.Blocks {
			if err := im.writeBlock(dev, &t.Blocks[i]); err != nil {
				return err
			}
		}
	}
	if err := dev.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	sb, err := im.superblock()
	if err != nil {
		return err
	}
	n := 0
	for _, off := range ondisk.SuperMirrorOffsets {
		if uint64(off)+ondisk.SuperInfoSize > im.p.totalBytes {
			break
		}
		sb.Bytenr = off
		buf := sb.Encode()
		im.p.Csum.SetBlock(buf)
		if _, err := dev.WriteAt(buf, int64(off)); err != nil {
			return fmt.Errorf("write superblock at %d: %w", off, err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("device of %d bytes has no room for a superblock", im.p.totalBytes)
	}
	if err := dev.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// writeBlock writes b to every copy of its chunk.
func (im *image) writeBlock(dev blockdev.Device, b *Block) error {
	for i := range im.plan.chunks {
		c := &im.plan.chunks[i]
		if b.Addr < c.Logical || b.Addr >= c.end() {
			continue
		}
		for _, s := range c.Stripes {
			phys := int64(s) + int64(b.Addr-c.Logical)
			if _, err := dev.WriteAt(b.Data, phys); err != nil {
				return fmt.Errorf("write node %d (tree %s) at physical %d: %w", b.Addr,
					ondisk.TreeName(b.Owner), phys, err)
			}
		}
		return nil
	}
	return fmt.Errorf("write node %d (tree %s): no chunk maps it", b.Addr, ondisk.TreeName(b.Owner))
}

// wipe zeroes the first and last 2 MiB of the filesystem and every
// superblock mirror slot on the device. mirrors btrfs_prepare_device
func (im *image) wipe(dev blockdev.Device) error {
	size := uint64(dev.Size())
	end := im.p.totalBytes
	ranges := [][2]uint64{{0, min(wipeBytes, end)}, {end - min(wipeBytes, end), end}}
	for _, off := range ondisk.SuperMirrorOffsets {
		ranges = append(ranges, [2]uint64{uint64(off), uint64(off) + ondisk.SuperInfoSize})
	}
	zero := make([]byte, wipeBytes)
	for _, r := range ranges {
		start, stop := r[0], min(r[1], size)
		if start >= stop {
			continue
		}
		if _, err := dev.WriteAt(zero[:stop-start], int64(start)); err != nil {
			return fmt.Errorf("wipe %d..%d: %w", start, stop, err)
		}
	}
	return nil
}
