// Package item decodes and encodes the data of every btrfs item type, one
// file per type. Layouts follow uapi/linux/btrfs_tree.h; offsets are given
// beside each field.
package item

import (
	"encoding/binary"
	"fmt"
	"time"
)

var le = binary.LittleEndian

// ErrShort is wrapped by decode errors for items smaller than their type needs.
var ErrShort = fmt.Errorf("item too short")

func short(what string, have, need int) error {
	return fmt.Errorf("%s: %d bytes, need %d: %w", what, have, need, ErrShort)
}

// Timespec is struct btrfs_timespec (12 bytes): sec u64, nsec u32.
type Timespec struct {
	Sec  int64
	Nsec uint32
}

// TimespecSize is the encoded size.
const TimespecSize = 12

// DecodeTimespec reads a timespec.
func DecodeTimespec(b []byte) Timespec {
	return Timespec{int64(le.Uint64(b)), le.Uint32(b[8:])}
}

// Encode writes the timespec.
func (t Timespec) Encode(b []byte) {
	le.PutUint64(b, uint64(t.Sec))
	le.PutUint32(b[8:], t.Nsec)
}

// Time converts to time.Time.
func (t Timespec) Time() time.Time { return time.Unix(t.Sec, int64(t.Nsec)) }

// TimespecOf converts from time.Time.
func TimespecOf(t time.Time) Timespec { return Timespec{t.Unix(), uint32(t.Nanosecond())} }
