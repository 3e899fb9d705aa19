package ondisk

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestDevT checks the stored form against the kernel's MKDEV and the
// userspace form against the C library's makedev (x/sys/unix mirrors it).
func TestDevT(t *testing.T) {
	for _, c := range []struct{ major, minor uint32 }{{0, 0}, {1, 3}, {8, 1}, {4, 70000}, {259, 70000}, {4095, 1<<20 - 1}} {
		d := MakeDevT(c.major, c.minor)
		if uint64(d) != uint64(c.major)<<20|uint64(c.minor) || d.Major() != c.major || d.Minor() != c.minor {
			t.Errorf("MakeDevT(%d, %d) = %#x: %d:%d", c.major, c.minor, uint64(d), d.Major(), d.Minor())
		}
		u := d.Encode()
		if u != unix.Mkdev(c.major, c.minor) {
			t.Errorf("%d:%d: Encode %#x, makedev %#x", c.major, c.minor, u, unix.Mkdev(c.major, c.minor))
		}
		if back := DecodeDevT(u); back != d {
			t.Errorf("%d:%d: DecodeDevT(Encode) = %d:%d", c.major, c.minor, back.Major(), back.Minor())
		}
		// FUSE carries the kernel's new_encode_dev in 32 bits
		fuse := c.minor&0xff | c.major<<8 | (c.minor&^0xff)<<12
		if uint32(u) != fuse || DecodeDevT(uint64(fuse)) != d {
			t.Errorf("%d:%d: 32-bit form %#x, new_encode_dev %#x", c.major, c.minor, uint32(u), fuse)
		}
	}
}
