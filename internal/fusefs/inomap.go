package fusefs

import (
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Bits of a stable number given to the inode number of a subvolume other
// than the mounted one; the subvolume ID goes above them.
const (
	inoBits    = 40
	subvolBits = 63 - inoBits
	// fallbackBase starts the numbers handed out, in order of first use,
	// to IDs that do not fit the packed form (bit 63 set).
	fallbackBase = uint64(1) << 63
)

// inoMap turns IDs into the 64-bit numbers go-fuse uses as node identity
// and reports as st_ino. Inodes of the mounted subvolume keep their btrfs
// number; others are subvol<<40 | ino. IDs that fit neither (inode numbers
// of 2^40 and up, subvolume IDs of 2^23 and up) get numbers from a table,
// stable for the life of the mount.
type inoMap struct {
	root ondisk.ObjectID

	mu   sync.Mutex
	fwd  map[ondisk.InodeRef]uint64
	back map[uint64]ondisk.InodeRef
	next uint64
}

func newInoMap(root ondisk.ObjectID) *inoMap {
	return &inoMap{root: root, fwd: map[ondisk.InodeRef]uint64{}, back: map[uint64]ondisk.InodeRef{}, next: fallbackBase}
}

// stable returns id's number.
func (m *inoMap) stable(id ondisk.InodeRef) uint64 {
	if id.Root == m.root && id.Ino < 1<<inoBits && id.Ino > 1 {
		return uint64(id.Ino)
	}
	if id.Root != m.root && id.Root < 1<<subvolBits && id.Ino < 1<<inoBits && id.Root > 0 {
		return uint64(id.Root<<inoBits | id.Ino)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n, ok := m.fwd[id]; ok {
		return n
	}
	n := m.next
	m.next++
	m.fwd[id] = n
	m.back[n] = id
	return n
}

// lookup inverts stable (file handles: the kernel asks for a node ID it
// forgot).
func (m *inoMap) lookup(n uint64) (ondisk.InodeRef, bool) {
	switch {
	case n >= fallbackBase:
		m.mu.Lock()
		defer m.mu.Unlock()
		id, ok := m.back[n]
		return id, ok
	case n < 1<<inoBits:
		return ondisk.InodeRef{Root: m.root, Ino: ondisk.ObjectID(n)}, true
	default:
		return ondisk.InodeRef{Root: ondisk.ObjectID(n >> inoBits), Ino: ondisk.ObjectID(n & (1<<inoBits - 1))}, true
	}
}
