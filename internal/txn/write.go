package txn

import (
	"fmt"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// maxWriteBatch bounds one coalesced device write.
const maxWriteBatch = 4 << 20

type devWrite struct {
	phys ondisk.PhysicalAddr
	data []byte
}

// writeBatched writes ws in physical order, merging contiguous ones. A
// non-nil scratch is a buffer kept by the caller across calls (under the
// caller's lock).
func (f *Engine) writeBatched(ws []devWrite, scratch *[]byte) error {
	sort.Slice(ws, func(i, j int) bool { return ws[i].phys < ws[j].phys })
	total := 0
	for _, w := range ws {
		total += len(w.data)
	}
	var buf []byte
	if scratch != nil {
		buf = (*scratch)[:0]
	}
	if cap(buf) < min(total, maxWriteBatch) {
		buf = make([]byte, 0, min(total, maxWriteBatch))
	}
	if scratch != nil {
		defer func() { *scratch = buf[:0] }()
	}
	var at ondisk.PhysicalAddr
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		_, err := f.Info.Dev.WriteAt(buf, int64(at))
		if err != nil {
			return fmt.Errorf("write %d bytes at physical %d: %w", len(buf), at, err)
		}
		buf = buf[:0]
		return nil
	}
	for _, w := range ws {
		if len(buf) > 0 && (at+ondisk.PhysicalAddr(len(buf)) != w.phys || len(buf)+len(w.data) > maxWriteBatch) {
			if err := flush(); err != nil {
				return err
			}
		}
		if len(buf) == 0 {
			at = w.phys
		}
		buf = append(buf, w.data...)
	}
	return flush()
}

// writeLogical writes data at a logical address to every copy.
func (f *Engine) writeLogical(addr ondisk.LogicalAddr, data []byte) error {
	for len(data) > 0 {
		copies, n, err := f.Info.Chunks.Map(addr, uint64(len(data)))
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("write logical %d: empty mapping", uint64(addr))
		}
		for _, c := range copies {
			if c.DevID != f.super.DevItem.DevID {
				return fmt.Errorf("write logical %d: device %d not present", uint64(addr), c.DevID)
			}
			if _, err := f.Info.Dev.WriteAt(data[:n], int64(c.Physical)); err != nil {
				return fmt.Errorf("write logical %d (physical %d): %w", uint64(addr), c.Physical, err)
			}
		}
		data = data[n:]
		addr += ondisk.LogicalAddr(n)
	}
	return nil
}
