package extent

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Checksum items: key (EXTENT_CSUM, EXTENT_CSUM, logical start), data the
// checksums of consecutive sectors from there.

func csumKey(a ondisk.LogicalAddr) ondisk.Key {
	return ondisk.Key{ObjectID: ondisk.ExtentCsumObjectID, Type: ondisk.ExtentCsumKey, Offset: uint64(a)}
}

// MaxCsumsPerItem is how many checksums one item may hold.
// mirrors MAX_CSUM_ITEMS
func (m *Manager) MaxCsumsPerItem() int {
	return (diskio.LeafDataSize(m.NodeSize)-2*ondisk.ItemHeaderSize)/m.Csum.Size() - 1
}

// csumItemBefore returns the last checksum item starting before end, or ok false.
func csumItemBefore(t *ctree.Tree, end ondisk.LogicalAddr) (ondisk.Key, []byte, bool, error) {
	if end == 0 {
		return ondisk.Key{}, nil, false, nil
	}
	p, ok, err := t.SearchBackward(csumKey(end - 1))
	if err != nil || !ok {
		return ondisk.Key{}, nil, false, err
	}
	k := p.Key()
	if k.ObjectID != ondisk.ExtentCsumObjectID || k.Type != ondisk.ExtentCsumKey {
		return ondisk.Key{}, nil, false, nil
	}
	return k, append([]byte(nil), p.Data()...), true, nil
}

// DelCsums removes the checksums of [bytenr, bytenr+n), trimming or
// splitting items that reach outside it. mirrors btrfs_del_csums
func (m *Manager) DelCsums(tr Trees, bytenr ondisk.LogicalAddr, n uint64) error {
	t, err := tr.Tree(ondisk.CsumTreeObjectID)
	if err != nil {
		return err
	}
	a := tr.Alloc()
	cs := uint64(m.Csum.Size())
	sector := uint64(m.SectorSize)
	end := bytenr + ondisk.LogicalAddr(n)
	for {
		k, data, ok, err := csumItemBefore(t, end)
		if err != nil {
			return fmt.Errorf("delete csums %d+%d: %w", uint64(bytenr), n, err)
		}
		if !ok {
			return nil
		}
		start := ondisk.LogicalAddr(k.Offset)
		iend := start + ondisk.LogicalAddr(uint64(len(data))/cs*sector)
		if iend <= bytenr {
			return nil
		}
		lo, hi := max(start, bytenr), min(iend, end)
		if err := t.DeleteItem(a, k); err != nil {
			return fmt.Errorf("delete csums %d+%d: %w", uint64(bytenr), n, err)
		}
		if start < lo {
			keep := uint64(lo-start) / sector * cs
			if err := t.InsertItem(a, k, data[:keep]); err != nil {
				return fmt.Errorf("delete csums %d+%d: %w", uint64(bytenr), n, err)
			}
		}
		if hi < iend {
			from := uint64(hi-start) / sector * cs
			if err := t.InsertItem(a, csumKey(hi), data[from:]); err != nil {
				return fmt.Errorf("delete csums %d+%d: %w", uint64(bytenr), n, err)
			}
		}
		if start >= bytenr {
			end = start
			if start == bytenr {
				return nil
			}
			continue
		}
		return nil
	}
}

// AddCsums computes the checksum of every sector of data (which starts at
// the sector-aligned bytenr) and stores them, appending to an item that
// ends at bytenr and splitting into items of at most MaxCsumsPerItem.
// Checksums already stored for the range are replaced.
// mirrors btrfs_csum_file_blocks
func (m *Manager) AddCsums(tr Trees, bytenr ondisk.LogicalAddr, data []byte) error {
	sector := int(m.SectorSize)
	if uint64(bytenr)%uint64(sector) != 0 || len(data)%sector != 0 {
		return fmt.Errorf("add csums %d+%d: not sector aligned", uint64(bytenr), len(data))
	}
	if len(data) == 0 {
		return nil
	}
	if err := m.DelCsums(tr, bytenr, uint64(len(data))); err != nil {
		return err
	}
	cs := m.Csum.Size()
	sums := make([]byte, 0, len(data)/sector*cs)
	for p := 0; p < len(data); p += sector {
		sums = append(sums, m.Csum.Sum(data[p:p+sector])...)
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
	if ok && ondisk.LogicalAddr(k.Offset)+ondisk.LogicalAddr(len(prev)/cs*sector) == bytenr && len(prev) < maxBytes {
		take := min(maxBytes-len(prev), len(sums))
		if err := t.UpdateItem(a, k, append(prev, sums[:take]...)); err != nil {
			return fmt.Errorf("add csums %d+%d: %w", uint64(bytenr), len(data), err)
		}
		sums = sums[take:]
		start += ondisk.LogicalAddr(take / cs * sector)
	}
	for len(sums) > 0 {
		take := min(maxBytes, len(sums))
		if err := t.InsertItem(a, csumKey(start), sums[:take]); err != nil {
			return fmt.Errorf("add csums %d+%d: %w", uint64(bytenr), len(data), err)
		}
		sums = sums[take:]
		start += ondisk.LogicalAddr(take / cs * sector)
	}
	return nil
}
