package mkfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// BenchmarkMkfs1GiB times making a 1 GiB image: Make in-process, the
// gobtrfs CLI (built for the benchmark; skipped if it does not build), and
// mkfs.btrfs. Each iteration starts from a fresh sparse file. The "vs"
// sub-benchmark runs mkfs.btrfs and the gobtrfs CLI alternately and reports
// their ratio as progs/gobtrfs.
func BenchmarkMkfs1GiB(b *testing.B) {
	dir := b.TempDir()
	img := filepath.Join(dir, "img")
	fresh := func() {
		os.Remove(img)
		testutil.SparseFile(b, img, 1<<30)
	}
	b.Run("Make", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			fresh()
			b.StartTimer()
			dev, err := blockdev.OpenFile(img, false)
			if err != nil {
				b.Fatal(err)
			}
			if err := Make(dev, Config{}); err != nil {
				b.Fatal(err)
			}
			dev.Close()
		}
	})
	cli := filepath.Join(dir, "gobtrfs")
	cliErr := exec.Command("go", "build", "-o", cli, "github.com/gobtrfs/gobtrfs/cmd/gobtrfs").Run()
	gobtrfs := func() error { return exec.Command(cli, "mkfs", "-q", "-f", img).Run() }
	progs := func() error { return exec.Command("mkfs.btrfs", "-q", "-f", img).Run() }
	timed := func(b *testing.B, fn func() error) time.Duration {
		b.StopTimer()
		fresh()
		b.StartTimer()
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	b.Run("gobtrfs-cli", func(b *testing.B) {
		if cliErr != nil {
			b.Skipf("cmd/gobtrfs does not build: %v", cliErr)
		}
		for i := 0; i < b.N; i++ {
			timed(b, gobtrfs)
		}
	})
	b.Run("mkfs.btrfs", func(b *testing.B) {
		testutil.NeedProgs(b)
		for i := 0; i < b.N; i++ {
			timed(b, progs)
		}
	})
	b.Run("vs", func(b *testing.B) {
		testutil.NeedProgs(b)
		if cliErr != nil {
			b.Skipf("cmd/gobtrfs does not build: %v", cliErr)
		}
		var ours, theirs time.Duration
		for i := 0; i < b.N; i++ {
			ours += timed(b, gobtrfs)
			theirs += timed(b, progs)
		}
		b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "gobtrfs-ns/op")
		b.ReportMetric(float64(theirs.Nanoseconds())/float64(b.N), "mkfs.btrfs-ns/op")
		b.ReportMetric(float64(theirs)/float64(ours), "progs/gobtrfs")
	})
}
