package fsinfo

// Assembling a multi-device filesystem from the devices given: the
// kernel's device scan (btrfs_scan_one_device: fsid, devid, uuid from each
// superblock) and read_one_dev (each DEV_ITEM of the chunk tree matched to a
// present device, or noted missing).

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

func deviceName(opts Options, i int) string {
	if i < len(opts.DeviceNames) && opts.DeviceNames[i] != "" {
		return opts.DeviceNames[i]
	}
	return fmt.Sprintf("device %d", i+1)
}

// assemble reads every device's superblock and returns the set and the
// device with the newest superblock, whose copy the filesystem is opened
// with (the kernel's latest_dev). Devices of a seed filesystem (SEEDING
// flag, another fsid) given with a sprouted one are its seeds.
func (f *FSInfo) assemble(devs []blockdev.Device, opts Options) (*volume.DeviceSet, *volume.Member, error) {
	set := volume.NewDeviceSet()
	var all []*volume.Member
	var firstErr error
	for i, dev := range devs {
		name := deviceName(opts, i)
		res, err := diskio.ReadSuper(dev, opts.SuperMirror-1)
		if err != nil {
			if len(devs) == 1 {
				return nil, nil, fmt.Errorf("open: %w", err)
			}
			// one of several (wiped, or not a device of this filesystem):
			// the others may still make up the filesystem
			f.warn(fmt.Sprintf("%s: %v: not used", name, err))
			firstErr = cmp.Or(firstErr, fmt.Errorf("open %s: %w", name, err))
			continue
		}
		if res.Warning != "" {
			if len(devs) > 1 {
				f.warn(name + ": " + res.Warning)
			} else {
				f.warn(res.Warning)
			}
		}
		sb := res.Super
		all = append(all, &volume.Member{DevID: sb.DevItem.DevID, UUID: sb.DevItem.UUID, Dev: dev, Name: name, Super: sb})
	}
	if len(all) == 0 {
		return nil, nil, firstErr
	}
	// the filesystem is that of the devices that are not seeds (when every
	// device is a seed, the seed filesystem itself)
	var latest *volume.Member
	for _, m := range all {
		if m.Super.Flags&ondisk.SuperFlagSeeding == 0 && (latest == nil || m.Super.Generation > latest.Super.Generation) {
			latest = m
		}
	}
	if latest == nil {
		for _, m := range all {
			if latest == nil || m.Super.Generation > latest.Super.Generation {
				latest = m
			}
		}
	}
	fsid := latest.Super.MetadataFSID()
	for _, m := range all {
		// devices belong together by the fsid their tree blocks carry (the
		// metadata_uuid when set): an interrupted fsid change (btrfstune
		// -m/-M) leaves devices of one filesystem with different fsids
		if mf := m.Super.MetadataFSID(); mf != fsid {
			if m.Super.Flags&ondisk.SuperFlagSeeding == 0 {
				return nil, nil, fmt.Errorf("open: %s is of filesystem %v, %s of filesystem %v: give the devices of one filesystem",
					m.Name, mf, latest.Name, fsid)
			}
			m.Seed = true // matched against the chunk tree's dev items (matchDevItems)
		}
		if err := set.Add(m); err != nil {
			return nil, nil, fmt.Errorf("open: %w", err)
		}
	}
	for _, m := range set.Members() {
		if m.Seed {
			continue // a seed's superblock is its own filesystem's: older by design
		}
		if m.Super.FSID != latest.Super.FSID {
			f.warn(fmt.Sprintf("%s has fsid %v, %s %v (metadata uuid %v on both): an fsid change did not finish on every device",
				m.Label(), m.Super.FSID, latest.Label(), latest.Super.FSID, m.Super.MetadataFSID()))
		}
		if g := m.Super.Generation; g != latest.Super.Generation {
			m.Stale = true
			f.warn(fmt.Sprintf("%s has generation %d, %s %d: it missed the last commits; its copies are read only when no other copy is good",
				m.Label(), g, latest.Label(), latest.Super.Generation))
		}
	}
	if sys, err := latest.Super.SysChunks(); err == nil {
		for _, s := range sys {
			markStripesMissing(set, s.Chunk)
		}
	}
	return set, latest, nil
}

// seedFSIDs are the fsids of the seed devices in set.
func seedFSIDs(set *volume.DeviceSet) []ondisk.UUID {
	var out []ondisk.UUID
	for _, m := range set.Members() {
		if m.Seed && !slices.Contains(out, m.Super.MetadataFSID()) {
			out = append(out, m.Super.MetadataFSID())
		}
	}
	return out
}

// markStripesMissing notes the devices c's stripes are on that are not present.
func markStripesMissing(set *volume.DeviceSet, c ondisk.Chunk) {
	for _, st := range c.Stripes {
		if !set.Has(st.DevID) {
			set.MarkMissing(st.DevID, st.DevUUID)
		}
	}
}

// maxMissingNamed bounds the missing devices named one by one at open.
const maxMissingNamed = 16

// matchDevItems matches each DEV_ITEM of the chunk tree with a present
// device (same devid and uuid) and warns about every one that is missing.
// mirrors read_one_dev + btrfs_check_rw_degradable's notices
func (f *FSInfo) matchDevItems() error {
	items := map[ondisk.DevID]ondisk.DevItem{}
	min := ondisk.Key{ObjectID: ondisk.DevItemsObjectID, Type: ondisk.DevItemKey}
	max := ondisk.Key{ObjectID: ondisk.DevItemsObjectID, Type: ondisk.DevItemKey, Offset: ^uint64(0)}
	err := f.ChunkTree().Range(min, max, func(k ondisk.Key, data []byte) bool {
		if len(data) >= ondisk.DevItemSize {
			d := ondisk.DecodeDevItem(data)
			items[d.DevID] = d
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("open: chunk tree dev items: %w", err)
	}
	for _, m := range f.Devices.Members() {
		d, ok := items[m.DevID]
		switch {
		case !ok && len(items) > 0 && m.Dev != f.Dev:
			f.Devices.Drop(m.DevID)
			f.warn(fmt.Sprintf("%s: the filesystem has no devid %d (no DEV_ITEM in the chunk tree): not used", m.Name, m.DevID))
		case ok && d.UUID != m.UUID && m.Dev != f.Dev:
			f.Devices.Drop(m.DevID)
			f.warn(fmt.Sprintf("%s is devid %d with uuid %v, but the filesystem's devid %d is uuid %v: not used",
				m.Name, m.DevID, m.UUID, m.DevID, d.UUID))
		case m.Seed && (!ok || d.FSID != m.Super.MetadataFSID()):
			f.Devices.Drop(m.DevID)
			f.warn(fmt.Sprintf("%s is a seed device of filesystem %v, which this filesystem was not sprouted from: not used",
				m.Name, m.Super.MetadataFSID()))
		}
	}
	seedsNamed := 0
	for id, d := range items {
		if !f.Devices.Has(id) {
			f.Devices.MarkMissing(id, d.UUID)
			if d.FSID != f.Super.MetadataFSID() && seedsNamed < maxMissingNamed {
				seedsNamed++
				f.warn(fmt.Sprintf("devid %d is a device of seed filesystem %v: give it too to read what the filesystem shares with its seed", id, d.FSID))
			}
		}
	}
	f.R.SeedFSIDs = seedFSIDs(f.Devices)
	for _, m := range f.Chunks.All() {
		markStripesMissing(f.Devices, m.Chunk)
	}
	missing := f.Devices.Missing()
	for i, miss := range missing {
		if i == maxMissingNamed && len(missing) > i+1 {
			// a crafted chunk tree may name any number of devices
			f.warn(fmt.Sprintf("... and %d more devices missing", len(missing)-i))
			break
		}
		f.warn(fmt.Sprintf("%v: reading from other copies where there are any", &miss))
	}
	return nil
}

// Degraded reports whether a device of the filesystem is missing.
func (f *FSInfo) Degraded() bool { return len(f.Devices.Missing()) > 0 }
