package gobtrfs_test

import (
	"io"

	"github.com/gobtrfs/gobtrfs/internal/csum"
)

// overlay is an image in memory with one block replaced.
type overlay struct {
	base  []byte
	off   int64
	patch []byte
}

func (o *overlay) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(o.base)) {
		return 0, io.EOF
	}
	n := copy(p, o.base[off:])
	// apply the patch where it overlaps [off, off+n)
	lo, hi := max(off, o.off), min(off+int64(n), o.off+int64(len(o.patch)))
	if lo < hi {
		copy(p[lo-off:hi-off], o.patch[lo-o.off:hi-o.off])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// mutate returns a copy of block with bytes at o changed and the block
// checksum recomputed.
func mutate(block []byte, o int, ct csum.Type) []byte {
	b := append([]byte(nil), block...)
	if o < len(b) {
		b[o] ^= 0xff
		if o+1 < len(b) {
			b[o+1] += 0x41
		}
	}
	ct.SetBlock(b)
	return b
}
