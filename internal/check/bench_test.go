package check

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// benchImage is a 1 GiB mkfs.btrfs --rootdir image of 10,000 files (100
// directories of 100 files of 0..100 KB, about 500 MB of data).
var benchImage struct {
	once sync.Once
	path string
}

func benchImg(b *testing.B) string {
	b.Helper()
	needProgs(b)
	benchImage.once.Do(func() {
		dir, err := os.MkdirTemp("", "check-bench-")
		if err != nil {
			b.Fatal(err)
		}
		src := filepath.Join(dir, "src")
		r := rand.New(rand.NewSource(1))
		buf := make([]byte, 100000)
		for d := 0; d < 100; d++ {
			sub := filepath.Join(src, fmt.Sprintf("d%03d", d))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := 0; f < 100; f++ {
				n := r.Intn(100001)
				r.Read(buf[:n])
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), buf[:n], 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		img := filepath.Join(dir, "bench.img")
		mkfsImage(b, img, src, 1<<30)
		os.RemoveAll(src)
		benchImage.path = img
	})
	if benchImage.path == "" {
		b.Fatal("no bench image")
	}
	return benchImage.path
}

// progsTime is the best of three runs of btrfs check --readonly.
func progsTime(b *testing.B, img string, extra ...string) time.Duration {
	best := time.Duration(1 << 62)
	for i := 0; i < 3; i++ {
		start := time.Now()
		if out, err := exec.Command("btrfs", append(append([]string{"check", "--readonly"}, extra...), img)...).CombinedOutput(); err != nil {
			b.Fatalf("btrfs check: %v\n%s", err, out)
		}
		best = min(best, time.Since(start))
	}
	return best
}

// BenchmarkCheck10kFiles times our check of the 1 GiB, 10,000-file image
// and reports btrfs check --readonly's time on it and the ratio
// (ours/progs; below 1 means faster).
func BenchmarkCheck10kFiles(b *testing.B) {
	benchCheck(b, Options{})
}

// BenchmarkCheck10kFilesDataCsum is the same with data checksum verification.
func BenchmarkCheck10kFilesDataCsum(b *testing.B) {
	benchCheck(b, Options{CheckDataCsum: true}, "--check-data-csum")
}

func benchCheck(b *testing.B, o Options, extra ...string) {
	img := benchImg(b)
	progs := progsTime(b, img, extra...)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep, err := ImageWith(img, o)
		if err != nil || !rep.OK() {
			b.Fatalf("check: %v %v", err, rep)
		}
	}
	b.StopTimer()
	ours := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(progs.Seconds()*1000, "progs-ms")
	b.ReportMetric(ours.Seconds()*1000, "ours-ms")
	b.ReportMetric(float64(ours)/float64(progs), "ours/progs")
}
