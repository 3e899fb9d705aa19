package fsops

import (
	"bytes"
	"syscall"
)

// nameMax is BTRFS_NAME_LEN.
const nameMax = 255

// checkName refuses names a directory cannot hold.
func checkName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return errf(syscall.EINVAL, "name %q", name)
	case len(name) > nameMax:
		return errf(syscall.ENAMETOOLONG, "name %q", name)
	case bytes.IndexByte([]byte(name), '/') >= 0 || bytes.IndexByte([]byte(name), 0) >= 0:
		return errf(syscall.EINVAL, "name %q", name)
	}
	return nil
}

// maxItemSize is BTRFS_MAX_ITEM_SIZE: the largest item an empty leaf holds.
func (f *FS) maxItemSize() int { return int(f.nodeSize) - 101 - 25 }
