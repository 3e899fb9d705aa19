package fusefs

import (
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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

// BenchmarkReadPath is the daemon's work for one 4 KiB READ of committed
// data at a random offset of a 32 MiB file (what Node.Read does, without
// the FUSE round trip): the extent and checksum lookups, the image pread
// and the verification. ns/op and allocs/op are the per-request cost that
// `gobtrfs bench randread` sees above its null READ server.
func BenchmarkReadPath(b *testing.B) {
	img := newImage(b, 256<<20)
	m := &fsys{}
	m.setAtimeRule(AtimeRelative, false)
	r, err := openRW(img, &Options{CommitInterval: time.Hour}, m)
	if err != nil {
		b.Fatal(err)
	}
	m.b, m.rw = r, r
	defer r.ops.Close()
	id, err := r.ops.Create(r.root, "f", syscall.S_IFREG|0o644, 0, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	const size = 32 << 20
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewSource(1))
	for off := 0; off < size; off += len(buf) {
		rng.Read(buf)
		if _, err := r.ops.WriteAt(id, uint64(off), buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.ops.Commit(); err != nil {
		b.Fatal(err)
	}
	n := &Node{m: m, id: id}
	dest := make([]byte, 4096)
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := rng.Int63n(size/4096) * 4096
		res, errno := n.Read(context.Background(), nil, dest, off)
		if errno != 0 {
			b.Fatal(errno)
		}
		if res.Size() != 4096 {
			b.Fatalf("read %d bytes", res.Size())
		}
		res.Done()
	}
}
