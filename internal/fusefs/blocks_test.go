package fusefs

import (
	"os/exec"
	"testing"
)

// TestBufferedBlocksLikeKernel: st_blocks of data still buffered counts
// the blocks written past the on-disk size, not the hole before them, as
// kernel btrfs counts delalloc bytes (xfstests' _require_sparse_files
// writes 50 KiB at 1.6 MiB and wants well under 1 MiB).
func TestBufferedBlocksLikeKernel(t *testing.T) {
	if _, err := exec.LookPath("xfs_io"); err != nil {
		t.Skip("xfs_io (xfsprogs) not installed")
	}
	sideBySide(t, "", Options{}, func(t *testing.T, dir string) string {
		cmd := exec.Command("sh", "-c", `xfs_io -f -c 'pwrite -q -b 51200 -S 0x61 1638400 51200' sparse; stat -c '%s %b' sparse
xfs_io -f -c 'pwrite -q 0 8192' -c fsync -c 'pwrite -q 1048576 4096' -c 'pwrite -q 1060000 100' holes; stat -c '%s %b' holes
xfs_io -f -c 'pwrite -q 0 6000' -c fsync -c 'pwrite -q 6000 4000' tail; stat -c '%s %b' tail`)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	})
}
