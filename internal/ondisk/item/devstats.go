package item

import "fmt"

// Device statistics indexes (btrfs_dev_stat_values).
const (
	DevStatWriteErrs = iota
	DevStatReadErrs
	DevStatFlushErrs
	DevStatCorruptionErrs
	DevStatGenerationErrs
	DevStatValuesMax
)

// DevStats is the DEV_STATS persistent item (key: DEV_STATS(0),
// PERSISTENT_ITEM, devid) of the device tree. Items written by newer
// kernels may hold more than DevStatValuesMax values; they are kept.
type DevStats struct {
	Values []uint64
}

// DecodeDevStats parses a device stats item; its size must be a multiple of 8.
func DecodeDevStats(b []byte) (DevStats, error) {
	if len(b)%8 != 0 {
		return DevStats{}, fmt.Errorf("dev stats item: size %d is not a multiple of 8", len(b))
	}
	var x DevStats
	for p := 0; p < len(b); p += 8 {
		x.Values = append(x.Values, le.Uint64(b[p:]))
	}
	return x, nil
}

// Value returns stat i, 0 when the item is too short to have it.
func (x *DevStats) Value(i int) uint64 {
	if i < 0 || i >= len(x.Values) {
		return 0
	}
	return x.Values[i]
}

// Size is the encoded size.
func (x *DevStats) Size() int { return 8 * len(x.Values) }

// Encode writes the item into b.
func (x *DevStats) Encode(b []byte) {
	for i, v := range x.Values {
		le.PutUint64(b[i*8:], v)
	}
}

// Bytes encodes to a new slice.
func (x *DevStats) Bytes() []byte {
	b := make([]byte, x.Size())
	x.Encode(b)
	return b
}
