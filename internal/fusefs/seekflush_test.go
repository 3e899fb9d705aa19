package fusefs

import (
	"os/exec"
	"testing"
)

// TestSeekBufferedLikeKernel: SEEK_DATA / SEEK_HOLE see data still in the
// kernel's page cache (written, not closed or fsynced), as on kernel btrfs
// (seekflush.go; xfstests' seek_sanity_test probes exactly this).
func TestSeekBufferedLikeKernel(t *testing.T) {
	if _, err := exec.LookPath("xfs_io"); err != nil {
		t.Skip("xfs_io (xfsprogs) not installed")
	}
	sideBySide(t, "", Options{}, func(t *testing.T, dir string) string {
		cmd := exec.Command("sh", "-c", `xfs_io -f -c 'pwrite -q 4096 1' -c 'seek -d 0' -c 'seek -h 0' -c 'pwrite -q 1048576 4096' -c 'seek -d 8192' -c 'seek -h 1048576' -c 'seek -a -r 0' f 2>&1
xfs_io -f -c 'pwrite -q 0 4096' -c fsync -c 'pwrite -q 65536 4096' -c 'seek -a -r 0' g 2>&1`)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	})
}
