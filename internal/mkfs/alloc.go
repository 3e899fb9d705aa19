package mkfs

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// span is a half-open logical range.
type span struct{ start, end ondisk.LogicalAddr }

// superStripes are the 64 KiB logical ranges of c whose copies hold a
// superblock mirror; the kernel never allocates there, so neither do we.
// mirrors exclude_super_stripes / btrfs_rmap_block
func superStripes(c *chunk) []span {
	var out []span
	for _, sb := range ondisk.SuperMirrorOffsets {
		for _, s := range c.Stripes {
			if sb < s || uint64(sb) >= uint64(s)+c.Length {
				continue
			}
			nr := (uint64(sb) - uint64(s)) / stripeLen
			start := c.Logical + ondisk.LogicalAddr(nr*stripeLen)
			out = append(out, span{start, min(start+stripeLen, c.end())})
		}
	}
	return out
}

// blockAlloc hands out tree block addresses from the start of one chunk,
// one after the other.
type blockAlloc struct {
	c        *chunk
	nodesize uint64
	next     ondisk.LogicalAddr
	excluded []span
}

func newBlockAlloc(c *chunk, nodesize uint32) *blockAlloc {
	return &blockAlloc{c: c, nodesize: uint64(nodesize), next: c.Logical, excluded: superStripes(c)}
}

func (a *blockAlloc) take() (ondisk.LogicalAddr, error) {
	for {
		addr, end := a.next, a.next+ondisk.LogicalAddr(a.nodesize)
		if end > a.c.end() {
			return 0, fmt.Errorf("%s chunk at %d is full", typeString(a.c.Type), a.c.Logical)
		}
		if s, ok := a.overlap(addr, end); ok {
			a.next = s.end
			continue
		}
		a.next = end
		return addr, nil
	}
}

func (a *blockAlloc) overlap(start, end ondisk.LogicalAddr) (span, bool) {
	for _, s := range a.excluded {
		if start < s.end && s.start < end {
			return s, true
		}
	}
	return span{}, false
}

// reserve takes n addresses.
func (a *blockAlloc) reserve(n int) ([]ondisk.LogicalAddr, error) {
	out := make([]ondisk.LogicalAddr, 0, n)
	for i := 0; i < n; i++ {
		addr, err := a.take()
		if err != nil {
			return nil, err
		}
		out = append(out, addr)
	}
	return out, nil
}

// fromList is an Allocator over addresses reserved beforehand.
func fromList(owner ondisk.ObjectID, addrs []ondisk.LogicalAddr) Allocator {
	i := 0
	return func() (ondisk.LogicalAddr, error) {
		if i >= len(addrs) {
			return 0, errNeedMore{owner, len(addrs) + 1}
		}
		i++
		return addrs[i-1], nil
	}
}

// errNeedMore says a tree needs more blocks than were reserved for it; Make
// reserves need blocks and tries again.
type errNeedMore struct {
	tree ondisk.ObjectID
	need int
}

func (e errNeedMore) Error() string {
	return fmt.Sprintf("tree %s needs more blocks than reserved", ondisk.TreeName(e.tree))
}
