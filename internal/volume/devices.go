package volume

import (
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// ErrMissingDevice is what reads of a copy on a device that was not given
// wrap (errors.Is); the error itself is a *MissingDeviceError.
var ErrMissingDevice = errors.New("device missing")

// MissingDeviceError names a device of the filesystem that is not present.
type MissingDeviceError struct {
	DevID ondisk.DevID
	UUID  ondisk.UUID // zero when not known (no dev item seen)
}

func (e *MissingDeviceError) Error() string {
	if e.UUID.IsZero() {
		return fmt.Sprintf("device devid %d is missing", e.DevID)
	}
	return fmt.Sprintf("device devid %d (uuid %v) is missing", e.DevID, e.UUID)
}

func (e *MissingDeviceError) Is(target error) bool { return target == ErrMissingDevice }

// Member is one present device of a filesystem.
type Member struct {
	DevID ondisk.DevID
	UUID  ondisk.UUID
	Dev   blockdev.Device
	// Name is what messages call the device (its path); may be empty.
	Name string
	// Super is the superblock read from this device (its own dev_item).
	Super *ondisk.Superblock
	// Stale is set when the device's superblock is older than the newest
	// device's: it missed commits, and its copies are read last.
	Stale bool
	// Seed is set for a device of a seed filesystem the filesystem was
	// sprouted from (btrfstune -S 1, btrfs device add): its superblock has
	// the seed's fsid and generation.
	Seed bool
}

// Label is how messages name m: "devid 2 (b.img)".
func (m *Member) Label() string {
	if m.Name == "" {
		return fmt.Sprintf("devid %d", m.DevID)
	}
	return fmt.Sprintf("devid %d (%s)", m.DevID, m.Name)
}

// DeviceSet is the devices of one filesystem, by devid (the kernel's
// btrfs_fs_devices): those present and those the chunk tree names that are
// missing. Safe for concurrent use.
type DeviceSet struct {
	mu      sync.RWMutex
	members map[ondisk.DevID]*Member
	missing map[ondisk.DevID]ondisk.UUID
}

// NewDeviceSet makes an empty set.
func NewDeviceSet() *DeviceSet {
	return &DeviceSet{members: map[ondisk.DevID]*Member{}, missing: map[ondisk.DevID]ondisk.UUID{}}
}

// Single is the set of a single-device filesystem: dev is devid id.
func Single(dev blockdev.Device, id ondisk.DevID) *DeviceSet {
	s := NewDeviceSet()
	s.members[id] = &Member{DevID: id, Dev: dev}
	return s
}

// Add registers a present device; a second device with the same devid is an error.
func (s *DeviceSet) Add(m *Member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.members[m.DevID]; o != nil {
		return fmt.Errorf("%s and %s are both devid %d (uuid %v): give each device once", o.nameOr(), m.nameOr(), m.DevID, m.UUID)
	}
	s.members[m.DevID] = m
	delete(s.missing, m.DevID)
	return nil
}

func (m *Member) nameOr() string {
	if m.Name == "" {
		return fmt.Sprintf("device %d", m.DevID)
	}
	return m.Name
}

// Drop removes a present device (it turned out not to belong) and returns it.
func (s *DeviceSet) Drop(id ondisk.DevID) *Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.members[id]
	delete(s.members, id)
	return m
}

// MarkMissing records that the filesystem has device id (uuid) and it is not present.
func (s *DeviceSet) MarkMissing(id ondisk.DevID, uuid ondisk.UUID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.members[id] == nil {
		s.missing[id] = uuid
	}
}

// Device returns the device of devid id, or a *MissingDeviceError.
func (s *DeviceSet) Device(id ondisk.DevID) (blockdev.Device, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if m := s.members[id]; m != nil {
		return m.Dev, nil
	}
	return nil, &MissingDeviceError{DevID: id, UUID: s.missing[id]}
}

// Has reports whether device id is present.
func (s *DeviceSet) Has(id ondisk.DevID) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.members[id] != nil
}

// Member returns the present device id, or nil.
func (s *DeviceSet) Member(id ondisk.DevID) *Member {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.members[id]
}

// Members returns the present devices in devid order.
func (s *DeviceSet) Members() []*Member {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Member, 0, len(s.members))
	for _, m := range s.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DevID < out[j].DevID })
	return out
}

// Missing returns the devices known to be missing, in devid order.
func (s *DeviceSet) Missing() []MissingDeviceError {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]MissingDeviceError, 0, len(s.missing))
	for id, u := range s.missing {
		out = append(out, MissingDeviceError{DevID: id, UUID: u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DevID < out[j].DevID })
	return out
}

// Present keeps the copies whose device is present (for a rebuilt copy:
// every device it is rebuilt from), those on stale devices last, otherwise
// in order. When none is present, the error names the missing device of
// the first copy.
func (s *DeviceSet) Present(copies []Copy) ([]Copy, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, stale := 0, 0
	for _, c := range copies {
		if ok, st := s.usable(c); ok {
			n++
			if st {
				stale++
			}
		}
	}
	if n == len(copies) && stale == 0 {
		return copies, nil
	}
	if n == 0 {
		if len(copies) == 0 {
			return nil, errors.New("no copies")
		}
		return nil, &MissingDeviceError{DevID: copies[0].DevID, UUID: s.missing[copies[0].DevID]}
	}
	out := make([]Copy, 0, n)
	for _, wantStale := range []bool{false, true} {
		for _, c := range copies {
			if ok, st := s.usable(c); ok && st == wantStale {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// usable reports whether c can be read and whether a stale device is involved.
func (s *DeviceSet) usable(c Copy) (ok, stale bool) {
	if len(c.Rebuild) == 0 {
		m := s.members[c.DevID]
		return m != nil, m != nil && m.Stale
	}
	for _, r := range c.Rebuild {
		m := s.members[r.DevID]
		if m == nil {
			return false, false
		}
		stale = stale || m.Stale
	}
	return true, stale
}

// Close closes every present device and returns the first error.
func (s *DeviceSet) Close() error {
	var first error
	for _, m := range s.Members() {
		if err := m.Dev.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
