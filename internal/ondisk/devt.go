package ondisk

// DevT is a device number as btrfs stores it in an inode item's rdev: the
// kernel's internal dev_t, major<<20 | minor (MINORBITS = 20).
type DevT uint64

// minorBits is the kernel's MINORBITS.
const minorBits = 20

// MakeDevT builds the stored form from major and minor. mirrors MKDEV
func MakeDevT(major, minor uint32) DevT { return DevT(uint64(major)<<minorBits | uint64(minor)) }

// Major returns the major number. mirrors MAJOR
func (d DevT) Major() uint32 { return uint32(d >> minorBits) }

// Minor returns the minor number. mirrors MINOR
func (d DevT) Minor() uint32 { return uint32(d & (1<<minorBits - 1)) }

// Encode returns the userspace form of d: st_rdev of stat(2), the dev
// argument of mknod(2), and (in its low 32 bits, the kernel's
// new_encode_dev for every major below 4096) the rdev FUSE carries.
// mirrors glibc's makedev
func (d DevT) Encode() uint64 {
	major, minor := uint64(d.Major()), uint64(d.Minor())
	return major&0xfff<<8 | major&^0xfff<<32 | minor&0xff | minor&^0xff<<12
}

// DecodeDevT inverts Encode: the stored form of a userspace device number.
// mirrors glibc's major/minor
func DecodeDevT(u uint64) DevT {
	major := uint32(u>>8&0xfff) | uint32(u>>32&^0xfff)
	minor := uint32(u&0xff) | uint32(u>>12&^0xff)
	return MakeDevT(major, minor)
}
