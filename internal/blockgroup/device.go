package blockgroup

import (
	"fmt"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// DeviceReserved is the start of every device kept free of chunks
// (BTRFS_DEVICE_RANGE_RESERVED: boot loaders and the primary superblock).
const DeviceReserved = 1 << 20

// DeviceSpace is the allocation state of the (single) device: which physical
// ranges dev extents cover. mirrors the device part of volumes.c
type DeviceSpace struct {
	mu    sync.Mutex
	Item  ondisk.DevItem // the DEV_ITEM; BytesUsed follows the dev extents
	alloc RangeSet
}

// NewDeviceSpace starts from the device item; AddExtent fills in the dev extents.
func NewDeviceSpace(item ondisk.DevItem) *DeviceSpace { return &DeviceSpace{Item: item} }

// AddExtent records an existing dev extent.
func (d *DeviceSpace) AddExtent(start ondisk.PhysicalAddr, n uint64) {
	d.mu.Lock()
	d.alloc.Add(uint64(start), n)
	d.mu.Unlock()
}

// Allocated is the bytes covered by dev extents.
func (d *DeviceSpace) Allocated() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.alloc.Total()
}

// Unallocated is the bytes not covered by dev extents (past the reserved start).
func (d *DeviceSpace) Unallocated() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := uint64(0)
	for _, h := range d.holes() {
		total += h.Len()
	}
	return total
}

// holes lists the unallocated ranges. Caller holds mu.
func (d *DeviceSpace) holes() []Range {
	var out []Range
	pos := uint64(DeviceReserved)
	for _, r := range d.alloc.Ranges() {
		if r.Start > pos {
			out = append(out, Range{pos, r.Start})
		}
		pos = max(pos, r.End)
	}
	if d.Item.TotalBytes > pos {
		out = append(out, Range{pos, d.Item.TotalBytes})
	}
	return out
}

// take reserves n bytes for a new chunk: the first hole of want bytes, else
// the largest hole if it has at least min bytes. It returns the start and
// the size taken (a multiple of align). mirrors find_free_dev_extent
func (d *DeviceSpace) take(want, minSize, align uint64) (ondisk.PhysicalAddr, uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best Range
	for _, h := range d.holes() {
		h.Start = roundUp(h.Start, align)
		if h.Start >= h.End {
			continue
		}
		if h.Len() >= want {
			best = Range{h.Start, h.Start + want}
			break
		}
		if h.Len() > best.Len() {
			best = h
		}
	}
	size := roundDown(best.Len(), align)
	if size < minSize || size == 0 {
		return 0, 0, fmt.Errorf("device %d: no unallocated hole of %d bytes: %w", d.Item.DevID, minSize, ErrNoSpace)
	}
	return ondisk.PhysicalAddr(best.Start), size, nil
}

// commit marks [start, start+n) allocated.
func (d *DeviceSpace) commit(start ondisk.PhysicalAddr, n uint64) {
	d.mu.Lock()
	d.alloc.Add(uint64(start), n)
	d.Item.BytesUsed = d.alloc.Total()
	d.mu.Unlock()
}

// DevItem returns the device item with bytes_used up to date.
func (d *DeviceSpace) DevItem() ondisk.DevItem {
	d.mu.Lock()
	defer d.mu.Unlock()
	it := d.Item
	it.BytesUsed = d.alloc.Total()
	return it
}

// Holes lists the unallocated ranges past the reserved start (FITRIM).
func (d *DeviceSpace) Holes() []Range {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.holes()
}
