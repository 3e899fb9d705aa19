package check

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// checkSuper checks the superblock on its own (the block reader already
// checked magic, checksum, sizes and levels).
func (c *checker) checkSuper() {
	sb := c.sb
	bad := func(format string, args ...any) { c.problem(ClassSuper, 0, 0, nil, format, args...) }
	if !csum.Type(sb.CsumType).Valid() {
		bad("unknown csum type %d", sb.CsumType)
	}
	if c.opt.SuperMirror == 0 {
		for _, m := range c.fi.Devices.Members() {
			if _, err := diskio.ReadSuperAt(m.Dev, ondisk.SuperMirrorOffsets[0]); err != nil {
				bad("primary superblock%s: %v", c.onDevice(m), err)
			}
		}
	}
	if sb.ChunkRootGeneration > sb.Generation {
		bad("chunk_root_generation %d is newer than generation %d", sb.ChunkRootGeneration, sb.Generation)
	}
	if size := uint64(c.fi.Dev.Size()); sb.NumDevices == 1 && sb.TotalBytes > size {
		// several devices: each dev item's total_bytes against its device (checkDevItems)
		bad("total_bytes %d exceeds the device size %d", sb.TotalBytes, size)
	}
	if sb.BytesUsed > sb.TotalBytes {
		bad("bytes_used %d exceeds total_bytes %d", sb.BytesUsed, sb.TotalBytes)
	}
	if sb.RootDirObjectID != ondisk.RootTreeDirObjectID {
		bad("root_dir %d, expected %d", sb.RootDirObjectID, ondisk.RootTreeDirObjectID)
	}
	if sb.Flags&(ondisk.SuperFlagMetadump|ondisk.SuperFlagMetadumpV2) != 0 {
		c.rep.warn("image is a metadata dump: data checksums will not match")
	}
	c.checkSuperMirrors()
}

// checkSuperMirrors warns about superblock copies that disagree with the
// one in use (the kernel writes all of them on every device at every commit).
func (c *checker) checkSuperMirrors() {
	for _, m := range c.fi.Devices.Members() {
		end := m.Super.DevItem.TotalBytes // the kernel writes the copies that fit the device
		if c.sb.NumDevices == 1 {
			end = c.sb.TotalBytes
		}
		for i, off := range ondisk.SuperMirrorOffsets {
			if i == 0 || int64(off)+ondisk.SuperInfoSize > m.Dev.Size() || uint64(off) >= end {
				continue
			}
			sm, err := diskio.ReadSuperAt(m.Dev, off)
			switch {
			case err != nil:
				c.rep.warn("superblock mirror %d%s: %v", i, c.onDevice(m), err)
			case sm.Generation != m.Super.Generation:
				c.rep.warn("superblock mirror %d%s has generation %d, its primary %d", i, c.onDevice(m), sm.Generation, m.Super.Generation)
			}
		}
	}
}

// onDevice is " of devid N (name)" when the filesystem has several devices.
func (c *checker) onDevice(m *volume.Member) string {
	if c.sb.NumDevices == 1 && len(c.fi.Devices.Members()) == 1 {
		return ""
	}
	return " of " + m.Label()
}

// checkBackupRoots checks that backup roots are not from the future and
// that the one of the current generation names the current roots.
func (c *checker) checkBackupRoots() {
	sb := c.sb
	current := false
	// Every slot of the current generation is compared with the current
	// roots; a mismatch is a problem only when no such slot matches: the
	// kernel may leave an older slot with the same tree root generation
	// (seen on a kernel-written image with the block group tree).
	var mismatched []string
	matched := false
	for i := range sb.BackupRoots {
		b := &sb.BackupRoots[i]
		if b.TreeRootGen == 0 {
			continue
		}
		prefix := fmt.Sprintf("backup root %d (generation %d): ", i, b.TreeRootGen)
		if b.TreeRootGen > uint64(sb.Generation) {
			c.problem(ClassSuper, 0, 0, nil, "%snewer than the superblock's generation %d", prefix, sb.Generation)
			continue
		}
		if b.TreeRootGen != uint64(sb.Generation) {
			continue
		}
		current = true
		var diffs []string
		check := func(what string, got, want uint64) {
			if got != want {
				diffs = append(diffs, fmt.Sprintf("%s%s %d, current %d", prefix, what, got, want))
			}
		}
		check("tree root", b.TreeRoot, uint64(sb.Root))
		check("tree root level", uint64(b.TreeRootLevel), uint64(sb.RootLevel))
		check("chunk root", b.ChunkRoot, uint64(sb.ChunkRoot))
		check("chunk root generation", b.ChunkRootGen, uint64(sb.ChunkRootGeneration))
		check("total_bytes", b.TotalBytes, sb.TotalBytes)
		check("bytes_used", b.BytesUsed, sb.BytesUsed)
		check("num_devices", b.NumDevices, sb.NumDevices)
		for _, r := range []struct {
			what      string
			id        ondisk.ObjectID
			root, gen uint64
			level     uint8
		}{
			{"extent root", ondisk.ExtentTreeObjectID, b.ExtentRoot, b.ExtentRootGen, b.ExtentRootLevel},
			{"fs root", ondisk.FSTreeObjectID, b.FSRoot, b.FSRootGen, b.FSRootLevel},
			{"dev root", ondisk.DevTreeObjectID, b.DevRoot, b.DevRootGen, b.DevRootLevel},
			{"csum root", ondisk.CsumTreeObjectID, b.CsumRoot, b.CsumRootGen, b.CsumRootLevel},
		} {
			ri := c.rootOf[r.id]
			if ri == nil {
				continue
			}
			if r.gen > uint64(sb.Generation) {
				// The kernel fills the backup roots late in a commit, when the
				// next transaction may already have COWed that tree (btrfs
				// check accepts it): the backup names a block of a later
				// transaction. Not damage; nothing to compare.
				c.rep.warn("backup root %d (generation %d): %s generation %d is later than the commit", i, b.TreeRootGen, r.what, r.gen)
				continue
			}
			check(r.what, r.root, uint64(ri.bytenr))
			check(r.what+" generation", r.gen, uint64(ri.gen))
			check(r.what+" level", uint64(r.level), uint64(ri.level))
		}
		if len(diffs) == 0 {
			matched = true
		}
		mismatched = append(mismatched, diffs...)
	}
	if !matched {
		for _, d := range mismatched {
			c.problem(ClassSuper, 0, 0, nil, "%s", d)
		}
	}
	if !current {
		c.rep.warn("no backup root for the current generation %d", sb.Generation)
	}
}
