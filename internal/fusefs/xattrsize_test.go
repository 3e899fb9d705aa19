package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// xattrSizeReport finds the largest value a user xattr may have and the
// errors just past it and past the VFS limit (64 KiB). The largest size is
// reported as "within the limit" when it lies between the kernel's
// (measured on a kernel mount first, into *kernelLargest) and btrfs's
// BTRFS_MAX_XATTR_SIZE (nodesize - 156 for name and value): the kernel's
// own limit is that one or up to ~500 bytes less, depending on where
// its leaf split puts the item (15729 of 16228 bytes for the first xattr of
// a new file with 16 KiB nodes, 16027 for a second one).
func xattrSizeReport(t *testing.T, dir string, nodeSize int, kernelLargest *int) string {
	var b strings.Builder
	p := filepath.Join(dir, "f")
	os.WriteFile(p, nil, 0o644)
	set := func(n int) error { return unix.Setxattr(p, "user.big", bytes.Repeat([]byte{'v'}, n), 0) }
	largest := sort.Search(1<<16+1, func(n int) bool { return set(n) != nil }) - 1
	if *kernelLargest < 0 {
		*kernelLargest = largest
	}
	max := nodeSize - 156 - len("user.big")
	fmt.Fprintf(&b, "largest value within the limit: %v\n", largest >= *kernelLargest && largest <= max)
	fmt.Fprintf(&b, "one byte more: %s\n", errName(set(largest+1)))
	for _, n := range []int{max + 1, 1 << 16, 1<<16 + 1} {
		fmt.Fprintf(&b, "%d bytes: %s\n", n, errName(set(n)))
	}
	got := make([]byte, 1<<16)
	set(largest)
	k, err := unix.Getxattr(p, "user.big", got)
	fmt.Fprintf(&b, "read back: %v %s\n", k == largest, errName(err))
	return b.String()
}

// TestXattrSizeLikeKernel: the largest xattr depends on the node size, as
// btrfs's BTRFS_MAX_XATTR_SIZE does, with the kernel's errors (ENOSPC
// past it, E2BIG past 64 KiB).
func TestXattrSizeLikeKernel(t *testing.T) {
	for _, ns := range []int{4096, 16384} {
		t.Run(fmt.Sprint("nodesize ", ns), func(t *testing.T) {
			kernelLargest := -1 // sideBySide reports the kernel's mount first
			sideBySideMkfs(t, []string{"-n", fmt.Sprint(ns)}, "", Options{}, func(t *testing.T, dir string) string {
				return xattrSizeReport(t, dir, ns, &kernelLargest)
			})
		})
	}
}
