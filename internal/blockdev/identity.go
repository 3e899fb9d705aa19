package blockdev

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FileID names the image behind a path whatever path names it (a hard
// link, a symlink, /proc/self/fd/N): the device and inode of a file, or
// the device number of a block device (any of its nodes).
type FileID struct {
	Dev, Ino uint64
}

// blockDevID is FileID.Dev of a block device (FileID.Ino is its rdev).
const blockDevID = ^uint64(0)

// Identify returns the FileID of what path names (symlinks followed).
func Identify(path string) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return FileID{}, fmt.Errorf("identify %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		return FileID{Dev: blockDevID, Ino: st.Rdev}, nil
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}, nil
}
