package extent

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// PutSums stores ready-made checksums (one per sector from bytenr, e.g.
// copied from a log tree), replacing those stored for the range, appending
// to an item that ends at bytenr and splitting into items of at most
// MaxCsumsPerItem. mirrors btrfs_csum_file_blocks
func (m *Manager) PutSums(tr Trees, bytenr ondisk.LogicalAddr, sums []byte) error {
	sector, cs := uint64(m.SectorSize), m.Csum.Size()
	if uint64(bytenr)%sector != 0 || len(sums)%cs != 0 {
		return fmt.Errorf("put csums at %d (%d bytes): not sector aligned", uint64(bytenr), len(sums))
	}
	if len(sums) == 0 {
		return nil
	}
	n := uint64(len(sums)/cs) * sector
	if err := m.DelCsums(tr, bytenr, n); err != nil {
		return err
	}
	t, err := tr.Tree(ondisk.CsumTreeObjectID)
	if err != nil {
		return err
	}
	a := tr.Alloc()
	maxBytes := m.MaxCsumsPerItem() * cs
	start := bytenr
	k, prev, ok, err := csumItemBefore(t, bytenr)
	if err != nil {
		return err
	}
	if ok && ondisk.LogicalAddr(k.Offset)+ondisk.LogicalAddr(uint64(len(prev)/cs)*sector) == bytenr && len(prev) < maxBytes {
		take := min(maxBytes-len(prev), len(sums))
		if err := t.UpdateItem(a, k, append(append([]byte(nil), prev...), sums[:take]...)); err != nil {
			return fmt.Errorf("put csums %d+%d: %w", uint64(bytenr), n, err)
		}
		sums = sums[take:]
		start += ondisk.LogicalAddr(uint64(take/cs) * sector)
	}
	for len(sums) > 0 {
		take := min(maxBytes, len(sums))
		if err := t.InsertItem(a, csumKey(start), sums[:take]); err != nil {
			return fmt.Errorf("put csums %d+%d: %w", uint64(bytenr), n, err)
		}
		sums = sums[take:]
		start += ondisk.LogicalAddr(uint64(take/cs) * sector)
	}
	return nil
}
