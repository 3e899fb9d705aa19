package fusefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkStream4K is seed 001's write stream through the mount (falloc,
// then 4 KiB pwrites and fsync), one 400 MiB file per iteration, on an
// image in the benchmark's temp directory. `gobtrfs bench stream` runs the
// same against the kernel and go-fuse's loopback.
func BenchmarkStream4K(b *testing.B) {
	needFuse(b)
	if _, err := exec.LookPath("xfs_io"); err != nil {
		b.Skip("xfs_io not installed")
	}
	for _, wbc := range []bool{false, true} {
		name := "plain"
		if wbc {
			name = "writeback_cache"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(400 << 20)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				img := newImage(b, 1500<<20)
				tm := mountImage(b, img, Options{NoWritebackCache: !wbc})
				f := filepath.Join(tm.dir, "f")
				if out, err := exec.Command("xfs_io", "-f", "-c", "falloc 0 400M", f).CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
				b.StartTimer()
				if out, err := exec.Command("xfs_io", "-c", "pwrite -W -b 4096 0 400M", f).CombinedOutput(); err != nil {
					b.Fatalf("%v %s", err, out)
				}
				b.StopTimer()
				tm.unmount()
				os.Remove(img)
			}
		})
	}
}
