// Package spaceinfo computes what a mounted btrfs reports about its space
// (the kernel's space-info.c, the BTRFS_IOC_SPACE_INFO ioctl, statfs and
// the global block reserve) from an image: block group items for the
// totals and use per type and profile, the chunk tree for what each
// device holds. `gobtrfs filesystem df|usage|show` print it as btrfs-progs
// prints the same numbers of a mount.
package spaceinfo

import (
	"fmt"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// GlobalRsvFlag marks the global block reserve's entry in Spaces
// (BTRFS_SPACE_INFO_GLOBAL_RSV).
const GlobalRsvFlag = uint64(1) << 49

// Space is one entry of the space info ioctl: a block group type with one
// profile. Total and Used are logical bytes.
type Space struct {
	Flags       uint64 // type | profile (profile 0 = single)
	Total, Used uint64
}

// Device is one device of the filesystem.
type Device struct {
	DevID ondisk.DevID
	Path  string
	// Size is the size the filesystem uses (dev_item total_bytes),
	// Allocated what its chunks take (dev_item bytes_used).
	Size, Allocated uint64
	// DeviceSize is the size of the image file or block device (0 when
	// missing); beyond Size it is slack.
	DeviceSize uint64
	Missing    bool
	// ByType is the bytes the chunks of each type|profile take on the
	// device (every stripe).
	ByType map[uint64]uint64
}

// Slack is what the device holds beyond the filesystem.
func (d *Device) Slack() uint64 {
	if d.DeviceSize > d.Size {
		return d.DeviceSize - d.Size
	}
	return 0
}

// Info is the filesystem's space.
type Info struct {
	Spaces        []Space // in the kernel ioctl's order; the global reserve last
	GlobalReserve uint64
	Devices       []Device // by devid
	TotalBytes    uint64   // superblock total_bytes
	SectorSize    uint32
}

// raidOrder is the kernel's raid index order (enum btrfs_raid_types:
// SINGLE, RAID0, RAID1, DUP, RAID10, RAID5, RAID6, RAID1C3, RAID1C4), which
// orders the ioctl's entries of one type.
var raidOrder = [...]uint64{0, ondisk.BlockGroupRaid0, ondisk.BlockGroupRaid1, ondisk.BlockGroupDup, ondisk.BlockGroupRaid10,
	ondisk.BlockGroupRaid5, ondisk.BlockGroupRaid6, ondisk.BlockGroupRaid1C3, ondisk.BlockGroupRaid1C4}

// Load reads the block groups and devices of fi. sizes gives the size of
// each present device's image (by devid), for the slack.
func Load(fi *fsinfo.FSInfo, paths map[ondisk.DevID]string, sizes map[ondisk.DevID]uint64) (*Info, error) {
	in := &Info{TotalBytes: fi.Super.TotalBytes, SectorSize: fi.Super.SectorSize}
	bgTree, err := fi.Tree(fi.BlockGroupTreeID())
	if err != nil {
		return nil, fmt.Errorf("space info: block group tree: %w", err)
	}
	type acc struct{ total, used uint64 }
	byFlags := map[uint64]*acc{}
	lo := ondisk.Key{Type: ondisk.BlockGroupItemKey}
	hi := ondisk.Key{ObjectID: ^ondisk.ObjectID(0), Type: ondisk.BlockGroupItemKey, Offset: ^uint64(0)}
	var derr error
	err = bgTree.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		if k.Type != ondisk.BlockGroupItemKey {
			return true
		}
		bg, err := item.DecodeBlockGroupItem(data)
		if err != nil {
			derr = fmt.Errorf("space info: block group %d: %w", k.ObjectID, err)
			return false
		}
		f := bg.Flags & (ondisk.BlockGroupTypeMask | ondisk.BlockGroupProfileMask)
		a := byFlags[f]
		if a == nil {
			a = &acc{}
			byFlags[f] = a
		}
		a.total += k.Offset
		a.used += bg.Used
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("space info: %w", err)
	}
	mixed := ondisk.BlockGroupData | ondisk.BlockGroupMetadata
	for _, typ := range []uint64{ondisk.BlockGroupData, ondisk.BlockGroupSystem, ondisk.BlockGroupMetadata, mixed} {
		for _, prof := range raidOrder {
			if a := byFlags[typ|prof]; a != nil {
				in.Spaces = append(in.Spaces, Space{Flags: typ | prof, Total: a.total, Used: a.used})
			}
		}
	}
	rsv, err := globalReserve(fi)
	if err != nil {
		return nil, err
	}
	in.GlobalReserve = rsv
	in.Spaces = append(in.Spaces, Space{Flags: GlobalRsvFlag, Total: rsv})
	if err := in.loadDevices(fi, paths, sizes); err != nil {
		return nil, err
	}
	return in, nil
}

// loadDevices reads the DEV_ITEMs and what each chunk's stripes take.
func (in *Info) loadDevices(fi *fsinfo.FSInfo, paths map[ondisk.DevID]string, sizes map[ondisk.DevID]uint64) error {
	lo := ondisk.Key{ObjectID: ondisk.DevItemsObjectID, Type: ondisk.DevItemKey}
	hi := ondisk.Key{ObjectID: ondisk.DevItemsObjectID, Type: ondisk.DevItemKey, Offset: ^uint64(0)}
	byID := map[ondisk.DevID]*Device{}
	err := fi.ChunkTree().Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		if len(data) >= ondisk.DevItemSize {
			d := ondisk.DecodeDevItem(data)
			in.Devices = append(in.Devices, Device{DevID: d.DevID, Size: d.TotalBytes, Allocated: d.BytesUsed,
				Path: paths[d.DevID], DeviceSize: sizes[d.DevID], Missing: !fi.Devices.Has(d.DevID), ByType: map[uint64]uint64{}})
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("space info: chunk tree dev items: %w", err)
	}
	sort.Slice(in.Devices, func(i, j int) bool { return in.Devices[i].DevID < in.Devices[j].DevID })
	for i := range in.Devices {
		d := &in.Devices[i]
		byID[d.DevID] = d
		if d.Path == "" {
			d.Path = "missing"
		}
	}
	for _, m := range fi.Chunks.All() {
		c := m.Chunk
		f := c.Type & (ondisk.BlockGroupTypeMask | ondisk.BlockGroupProfileMask)
		per := StripeSize(c)
		for _, st := range c.Stripes {
			if d := byID[st.DevID]; d != nil {
				d.ByType[f] += per
			}
		}
	}
	return nil
}

// StripeSize is the bytes each stripe of c takes on its device.
func StripeSize(c ondisk.Chunk) uint64 {
	n := uint64(len(c.Stripes))
	p := c.Type & ondisk.BlockGroupProfileMask
	switch {
	case n == 0:
		return 0
	case p&ondisk.BlockGroupRaid0 != 0:
		return c.Length / n
	case p&ondisk.BlockGroupRaid10 != 0:
		sub := max(uint64(c.SubStripes), 1)
		return c.Length / max(n/sub, 1)
	case p&ondisk.BlockGroupRaid5 != 0 && n > 1:
		return c.Length / (n - 1)
	case p&ondisk.BlockGroupRaid6 != 0 && n > 2:
		return c.Length / (n - 2)
	}
	return c.Length
}

// NCopies is how many copies a profile keeps (btrfs_bg_type_to_ncopies);
// RAID5/6 count 1.
func NCopies(flags uint64) uint64 {
	switch p := flags & ondisk.BlockGroupProfileMask; {
	case p&(ondisk.BlockGroupDup|ondisk.BlockGroupRaid1|ondisk.BlockGroupRaid10) != 0:
		return 2
	case p&ondisk.BlockGroupRaid1C3 != 0:
		return 3
	case p&ondisk.BlockGroupRaid1C4 != 0:
		return 4
	}
	return 1
}

// TypeName is btrfs_group_type_str.
func TypeName(flags uint64) string {
	switch {
	case flags&GlobalRsvFlag != 0:
		return "GlobalReserve"
	case flags&ondisk.BlockGroupData != 0 && flags&ondisk.BlockGroupMetadata != 0:
		return "Data+Metadata"
	case flags&ondisk.BlockGroupData != 0:
		return "Data"
	case flags&ondisk.BlockGroupSystem != 0:
		return "System"
	case flags&ondisk.BlockGroupMetadata != 0:
		return "Metadata"
	}
	return "unknown"
}

// ProfileName is btrfs_group_profile_str.
func ProfileName(flags uint64) string {
	switch p := flags & ondisk.BlockGroupProfileMask; p {
	case 0:
		return "single"
	case ondisk.BlockGroupDup:
		return "DUP"
	case ondisk.BlockGroupRaid0:
		return "RAID0"
	case ondisk.BlockGroupRaid1:
		return "RAID1"
	case ondisk.BlockGroupRaid10:
		return "RAID10"
	case ondisk.BlockGroupRaid5:
		return "RAID5"
	case ondisk.BlockGroupRaid6:
		return "RAID6"
	case ondisk.BlockGroupRaid1C3:
		return "RAID1C3"
	case ondisk.BlockGroupRaid1C4:
		return "RAID1C4"
	}
	return "unknown"
}
