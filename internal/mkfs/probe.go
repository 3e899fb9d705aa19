package mkfs

import (
	"bytes"
	"encoding/binary"
	"io"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// ExistingFilesystem names the filesystem whose signature r (of size bytes)
// carries: "btrfs" (primary or first mirror superblock), "ext2/ext3/ext4"
// or "xfs"; "" when it finds none. mkfs refuses to overwrite such a device
// unless forced, as mkfs.btrfs does (it asks libblkid, which knows more).
func ExistingFilesystem(r io.ReaderAt, size int64) string {
	at := func(off int64, n int) []byte {
		if off+int64(n) > size {
			return nil
		}
		b := make([]byte, n)
		if _, err := r.ReadAt(b, off); err != nil {
			return nil
		}
		return b
	}
	for _, off := range ondisk.SuperMirrorOffsets[:2] {
		if b := at(int64(off)+0x40, 8); b != nil && binary.LittleEndian.Uint64(b) == ondisk.SuperMagic {
			return "btrfs"
		}
	}
	if b := at(1024+56, 2); b != nil && binary.LittleEndian.Uint16(b) == 0xEF53 {
		return "ext2/ext3/ext4"
	}
	if b := at(0, 4); bytes.Equal(b, []byte("XFSB")) {
		return "xfs"
	}
	return ""
}
