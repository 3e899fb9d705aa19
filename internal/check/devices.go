package check

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// devItemRec is a DEV_ITEM of the chunk tree.
type devItemRec struct {
	dev  ondisk.DevItem
	key  ondisk.Key
	leaf ondisk.LogicalAddr
}

// devExtentRec is a DEV_EXTENT of the device tree.
type devExtentRec struct {
	devid, physical, length, chunkOffset uint64
	key                                  ondisk.Key
	leaf                                 ondisk.LogicalAddr
	matched                              bool // a chunk stripe points here
}

// devTreeLeaf records the dev extents of a device tree leaf.
func (c *checker) devTreeLeaf(n *diskio.Node, fresh bool) {
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		switch k.Type {
		case ondisk.DevExtentKey:
			x, err := item.DecodeDevExtent(n.ItemData(i))
			if err != nil {
				c.problem(ClassChunk, ondisk.DevTreeObjectID, n.Addr, keyp(k), "%v", err)
				continue
			}
			c.dexts = append(c.dexts, devExtentRec{devid: uint64(k.ObjectID), physical: k.Offset, length: x.Length,
				chunkOffset: uint64(x.ChunkOffset), key: k, leaf: n.Addr})
		case ondisk.PersistentItemKey, ondisk.DevReplaceKey:
		default:
			c.problem(ClassChunk, ondisk.DevTreeObjectID, n.Addr, keyp(k), "unexpected %s item in the device tree", k.Type)
		}
	}
}

// devItem returns the dev item of devid, or nil.
func (c *checker) devItem(devid uint64) *devItemRec {
	for i := range c.devs {
		if uint64(c.devs[i].dev.DevID) == devid {
			return &c.devs[i]
		}
	}
	return nil
}

func (c *checker) checkDevExtents() {
	for i := range c.dexts {
		d := &c.dexts[i]
		bad := func(format string, args ...any) {
			c.problem(ClassChunk, ondisk.DevTreeObjectID, d.leaf, keyp(d.key), format, args...)
		}
		if !d.matched {
			bad("dev extent [%d, %d) of devid %d has no chunk stripe pointing to it (chunk_offset %d)",
				d.physical, d.physical+d.length, d.devid, d.chunkOffset)
		}
		if i > 0 {
			if p := &c.dexts[i-1]; p.devid == d.devid && p.physical+p.length > d.physical {
				bad("dev extent overlaps the previous one [%d, %d)", p.physical, p.physical+p.length)
			}
		}
		di := c.devItem(d.devid)
		if di == nil {
			bad("dev extent of devid %d, which has no dev item", d.devid)
			continue
		}
		if d.physical+d.length > di.dev.TotalBytes {
			bad("dev extent [%d, %d) beyond the device's total_bytes %d", d.physical, d.physical+d.length, di.dev.TotalBytes)
		}
	}
}

func (c *checker) checkDevItems() {
	var total uint64
	for i := range c.devs {
		di := &c.devs[i]
		bad := func(format string, args ...any) {
			c.problem(ClassChunk, ondisk.ChunkTreeObjectID, di.leaf, keyp(di.key), format, args...)
		}
		total += di.dev.TotalBytes
		var used uint64
		for j := range c.dexts {
			if c.dexts[j].devid == uint64(di.dev.DevID) {
				used += c.dexts[j].length
			}
		}
		if used != di.dev.BytesUsed {
			bad("bytes_used %d but the dev extents add up to %d", di.dev.BytesUsed, used)
		}
		if di.dev.BytesUsed > di.dev.TotalBytes {
			bad("bytes_used %d exceeds total_bytes %d", di.dev.BytesUsed, di.dev.TotalBytes)
		}
		m := c.fi.Devices.Member(di.dev.DevID)
		// with METADATA_UUID the dev items keep the metadata fsid (the
		// kernel's read_one_dev looks the device up by it); a seed's keep
		// the seed's: a seed device given (its own superblock says so) or
		// missing (said by a warning)
		seed := (m != nil && m.Seed && m.Super.MetadataFSID() == di.dev.FSID) || (m == nil && c.fi.Super.NumDevices > 1)
		if want := c.sb.MetadataFSID(); di.dev.FSID != want && !seed {
			bad("dev item fsid %v, superblock (metadata) fsid %v", di.dev.FSID, want)
		}
		if m != nil {
			if size := uint64(m.Dev.Size()); di.dev.TotalBytes > size {
				bad("total_bytes %d exceeds the device size %d%s", di.dev.TotalBytes, size, c.onDevice(m))
			}
			sd := &m.Super.DevItem
			if sd.UUID != di.dev.UUID || sd.TotalBytes != di.dev.TotalBytes {
				c.problem(ClassSuper, 0, 0, nil, "superblock dev item (uuid %v total_bytes %d) differs from the chunk tree's (uuid %v total_bytes %d)",
					sd.UUID, sd.TotalBytes, di.dev.UUID, di.dev.TotalBytes)
			}
			if sd.BytesUsed != di.dev.BytesUsed && !m.Seed { // a seed's superblock is its own filesystem's
				c.rep.warn("device %d's bytes_used is %d in the chunk tree but %d in the superblock", di.dev.DevID, di.dev.BytesUsed, sd.BytesUsed)
			}
		}
	}
	for _, m := range c.fi.Devices.Members() {
		if c.devItem(uint64(m.DevID)) == nil {
			c.problem(ClassChunk, ondisk.ChunkTreeObjectID, 0, nil, "no dev item for the superblock's devid %d%s", m.DevID, c.onDevice(m))
		}
	}
	if uint64(len(c.devs)) != c.sb.NumDevices {
		c.problem(ClassSuper, 0, 0, nil, "num_devices %d but the chunk tree has %d dev items", c.sb.NumDevices, len(c.devs))
	}
	// mirrors is_super_size_valid
	if c.sb.TotalBytes < total {
		c.problem(ClassSuper, 0, 0, nil, "total_bytes %d is smaller than the devices' total %d", c.sb.TotalBytes, total)
	} else if c.sb.TotalBytes != total {
		c.rep.warn("superblock total_bytes %d, devices add up to %d", c.sb.TotalBytes, total)
	}
}
