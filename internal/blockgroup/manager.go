package blockgroup

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// ErrNoSpace is returned (wrapped) when no block group and no unallocated
// device space can hold an allocation. errors.Is(err, syscall.ENOSPC) holds.
var ErrNoSpace = syscall.ENOSPC

// StripeLen is BTRFS_STRIPE_LEN: tree blocks never cross a multiple of it,
// and superblock copies exclude the whole stripe they lie in.
const StripeLen = 64 << 10

// Manager is the set of block groups of one filesystem. Safe for concurrent use.
type Manager struct {
	mu         sync.Mutex
	groups     []*Group // sorted by Start
	byKind     map[uint64][]*Group
	sectorSize uint32
	nodeSize   uint32
	bytesUsed  uint64 // superblock bytes_used: the sum of the groups' used
	hint       map[uint64]uint64
	dev        *DeviceSpace
}

// NewManager returns an empty manager.
func NewManager(sectorSize, nodeSize uint32, dev *DeviceSpace) *Manager {
	return &Manager{sectorSize: sectorSize, nodeSize: nodeSize, hint: map[uint64]uint64{}, dev: dev,
		byKind: map[uint64][]*Group{}}
}

// Device returns the device space allocator.
func (m *Manager) Device() *DeviceSpace { return m.dev }

// add inserts g in order. Caller holds mu.
func (m *Manager) add(g *Group) error {
	i := sort.Search(len(m.groups), func(i int) bool { return m.groups[i].Start >= g.Start })
	if i < len(m.groups) && m.groups[i].Start < g.End() || i > 0 && m.groups[i-1].End() > g.Start {
		return fmt.Errorf("block group %d+%d overlaps another", uint64(g.Start), g.Length)
	}
	m.groups = append(m.groups, nil)
	copy(m.groups[i+1:], m.groups[i:])
	m.groups[i] = g
	for _, k := range []uint64{ondisk.BlockGroupData, ondisk.BlockGroupMetadata, ondisk.BlockGroupSystem} {
		if g.IsType(k) {
			l := m.byKind[k]
			j := sort.Search(len(l), func(j int) bool { return l[j].Start >= g.Start })
			l = append(l, nil)
			copy(l[j+1:], l[j:])
			l[j] = g
			m.byKind[k] = l
		}
	}
	return nil
}

// ofKind returns the groups holding kind, in address order. Caller holds mu.
func (m *Manager) ofKind(kind uint64) []*Group {
	if l, ok := m.byKind[kind]; ok {
		return l
	}
	var out []*Group
	for _, g := range m.groups {
		if g.IsType(kind) {
			out = append(out, g)
		}
	}
	return out
}

func (m *Manager) lookup(a ondisk.LogicalAddr) *Group {
	i := sort.Search(len(m.groups), func(i int) bool { return m.groups[i].End() > a })
	if i < len(m.groups) && m.groups[i].Start <= a {
		return m.groups[i]
	}
	return nil
}

// Lookup returns the group containing a, or nil.
func (m *Manager) Lookup(a ondisk.LogicalAddr) *Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookup(a)
}

// Groups returns the groups in address order.
func (m *Manager) Groups() []*Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*Group(nil), m.groups...)
}

// BytesUsed is the superblock's bytes_used.
func (m *Manager) BytesUsed() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytesUsed
}

// Alloc finds n free bytes in a group holding kind (DATA, METADATA or
// SYSTEM), aligned to align; tree blocks (tree true) never cross a
// StripeLen boundary. The bytes become reserved. It does not allocate new
// chunks: on failure it returns ErrNoSpace and the caller may add a chunk.
// mirrors find_free_extent
func (m *Manager) Alloc(kind, n, align uint64, tree bool) (ondisk.LogicalAddr, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	noCross := uint64(0)
	if tree {
		noCross = StripeLen
	}
	hint := m.hint[kind]
	// First the group holding the hint (locality), then every group in
	// order from there, wrapping around.
	groups := m.ofKind(kind)
	first := sort.Search(len(groups), func(i int) bool { return groups[i].End() > ondisk.LogicalAddr(hint) })
	for j := 0; j < len(groups); j++ {
		i := j
		g := groups[(first+j)%len(groups)]
		if g.free.Total() < n {
			continue
		}
		from := rel(g.Start)
		if i == 0 && g.Contains(ondisk.LogicalAddr(hint)) {
			from = hint
		}
		a, ok := g.free.find(n, align, noCross, from, g.free.first(from))
		if !ok && from != rel(g.Start) {
			a, ok = g.free.find(n, align, noCross, rel(g.Start), 0)
		}
		if !ok {
			continue
		}
		g.free.Remove(a, n)
		g.reserved += n
		m.hint[kind] = a + n
		return ondisk.LogicalAddr(a), nil
	}
	return 0, fmt.Errorf("allocate %d bytes of %s: %w", n, KindName(kind), ErrNoSpace)
}

// AllocAt reserves exactly [a, a+n), which must be free.
func (m *Manager) AllocAt(a ondisk.LogicalAddr, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.lookup(a)
	if g == nil || !g.free.Contains(rel(a), n) {
		return fmt.Errorf("reserve %d+%d: not free", uint64(a), n)
	}
	g.free.Remove(rel(a), n)
	g.reserved += n
	return nil
}

func (m *Manager) groupFor(op string, a ondisk.LogicalAddr, n uint64) (*Group, error) {
	g := m.lookup(a)
	if g == nil || a+ondisk.LogicalAddr(n) > g.End() {
		return nil, fmt.Errorf("%s %d+%d: not inside a block group", op, uint64(a), n)
	}
	return g, nil
}

// Inserted accounts an extent whose extent item was just inserted:
// reserved becomes used. mirrors btrfs_update_block_group (alloc)
func (m *Manager) Inserted(a ondisk.LogicalAddr, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.groupFor("account allocation", a, n)
	if err != nil {
		return err
	}
	if g.reserved < n {
		return fmt.Errorf("account allocation %d+%d: only %d bytes reserved in %v", uint64(a), n, g.reserved, g)
	}
	g.reserved -= n
	g.used += n
	g.dirty = true
	m.bytesUsed += n
	return nil
}

// Freed accounts an extent whose last reference was dropped: used becomes
// pinned until the transaction commits. mirrors btrfs_update_block_group (free) + btrfs_pin_extent
func (m *Manager) Freed(a ondisk.LogicalAddr, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.groupFor("account free", a, n)
	if err != nil {
		return err
	}
	if g.used < n || g.free.Overlaps(rel(a), n) || g.pinned.Overlaps(rel(a), n) || g.committing.Overlaps(rel(a), n) {
		return fmt.Errorf("account free %d+%d: not in use in %v", uint64(a), n, g)
	}
	g.used -= n
	g.dirty = true
	m.bytesUsed -= n
	g.pinned.Add(rel(a), n)
	return nil
}

// Release returns a reserved extent that was never inserted nor written to
// free space at once. mirrors btrfs_free_reserved_extent
func (m *Manager) Release(a ondisk.LogicalAddr, n uint64) error {
	return m.unreserve(a, n, false)
}

// ReleasePinned returns a reserved extent that was never inserted, but may
// have been written, to free space once the transaction commits.
func (m *Manager) ReleasePinned(a ondisk.LogicalAddr, n uint64) error {
	return m.unreserve(a, n, true)
}

func (m *Manager) unreserve(a ondisk.LogicalAddr, n uint64, pin bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, err := m.groupFor("release", a, n)
	if err != nil {
		return err
	}
	if g.reserved < n {
		return fmt.Errorf("release %d+%d: only %d bytes reserved in %v", uint64(a), n, g.reserved, g)
	}
	g.reserved -= n
	if pin {
		g.pinned.Add(rel(a), n)
	} else {
		g.free.Add(rel(a), n)
	}
	return nil
}

// Unpin makes the space freed by the committed transaction allocatable.
// mirrors btrfs_finish_extent_commit / unpin_extent_range
func (m *Manager) Unpin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		for _, set := range []*RangeSet{&g.committing, &g.pinned} {
			for _, r := range set.Ranges() {
				g.free.Add(r.Start, r.Len())
			}
			set.Clear()
		}
	}
}

// Dirty returns the groups whose items must be rewritten, and clears the mark.
func (m *Manager) TakeDirty() []*Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Group
	for _, g := range m.groups {
		if g.dirty && !g.pending {
			out = append(out, g)
			g.dirty = false
		}
	}
	return out
}

// MarkDirty asks for g's item to be rewritten.
func (m *Manager) MarkDirty(g *Group) {
	m.mu.Lock()
	g.dirty = true
	m.mu.Unlock()
}

// HasDirty reports whether any group item needs writing.
func (m *Manager) HasDirty() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		if g.dirty || g.pending {
			return true
		}
	}
	return false
}

// Space sums a kind's groups. mirrors struct btrfs_space_info
type Space struct {
	Total, Used, Reserved, Pinned, Free, Super uint64
	Groups                                     int
}

// Space returns the totals for kind.
func (m *Manager) Space(kind uint64) Space {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s Space
	for _, g := range m.ofKind(kind) {
		s.Groups++
		s.Total += g.Length
		s.Used += g.used
		s.Reserved += g.reserved
		s.Pinned += g.Pinned()
		s.Free += g.free.Total()
		s.Super += g.super
	}
	return s
}

// Check verifies every group's accounting (for tests).
func (m *Manager) Check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	total := uint64(0)
	for _, g := range m.groups {
		if err := g.check(); err != nil {
			errs = append(errs, err)
		}
		total += g.used
	}
	if total != m.bytesUsed {
		errs = append(errs, fmt.Errorf("bytes_used %d, groups sum to %d", m.bytesUsed, total))
	}
	return errors.Join(errs...)
}

// KindName names a block group type for messages.
func KindName(kind uint64) string {
	switch {
	case kind&ondisk.BlockGroupData != 0 && kind&ondisk.BlockGroupMetadata != 0:
		return "data+metadata"
	case kind&ondisk.BlockGroupData != 0:
		return "data"
	case kind&ondisk.BlockGroupMetadata != 0:
		return "metadata"
	case kind&ondisk.BlockGroupSystem != 0:
		return "system"
	}
	return fmt.Sprintf("type %#x", kind)
}
