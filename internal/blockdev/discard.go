package blockdev

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Discarder is a Device that can drop what a byte range holds (FITRIM:
// the filesystem's free space), so that the space it takes is given back.
type Discarder interface {
	// CanDiscard reports whether Discard works on this device.
	CanDiscard() bool
	// Discard drops [off, off+n): later reads of it return zeros.
	Discard(off, n int64) error
}

// CanDiscard: an image file opened for writing can punch holes; a block
// device is not discarded here.
func (d *File) CanDiscard() bool {
	if d.readOnly {
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(int(d.f.Fd()), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG
}

// Discard punches a hole in the image file (the file keeps its size).
func (d *File) Discard(off, n int64) error {
	if !d.CanDiscard() {
		return fmt.Errorf("discard %d+%d of %s: %w", off, n, d.f.Name(), syscall.EOPNOTSUPP)
	}
	if err := unix.Fallocate(int(d.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n); err != nil {
		return fmt.Errorf("discard %d+%d of %s: %w", off, n, d.f.Name(), err)
	}
	return nil
}
