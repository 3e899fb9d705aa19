package gobtrfs_test

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// randomReads does n random 4 KiB ReadAt calls on name and checks them
// against want; it returns the file's cached extent count afterwards.
func randomReads(t *testing.T, fsys *gobtrfs.FS, name string, want []byte, n int, r *rand.Rand) int {
	f, err := fsys.OpenFile(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for i := 0; i < n; i++ {
		off := r.Int63n(int64(len(want)) - 4096)
		if i%2 == 0 {
			off &^= 4095
		}
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			t.Fatalf("ReadAt %d: %v", off, err)
		}
		if !bytes.Equal(buf, want[off:off+4096]) {
			t.Fatalf("ReadAt %d: content differs", off)
		}
	}
	return f.CachedExtents()
}

// TestExtentCacheWholeExtents: after 10,000 random 4 KiB reads of a 32 MiB
// file, the inode's cache holds one entry per EXTENT_DATA item, never one per
// request. mkfs.btrfs (btrfs-progs 6.2) --rootdir writes file data in 1 MiB
// extents, so this image has 32 items and the cache must hold exactly 32;
// TestExtentCacheKernelOneExtent covers the single-extent case.
func TestExtentCacheWholeExtents(t *testing.T) {
	testutil.NeedProgs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	r := rand.New(rand.NewSource(seed(t)))
	data := make([]byte, 32<<20)
	r.Read(data)
	os.WriteFile(filepath.Join(src, "big"), data, 0o644)
	img := filepath.Join(dir, "img")
	testutil.MkfsRootdir(t, src, img, 256<<20)
	items := testimg.DumpTreeCount(t, img, "fs", "EXTENT_DATA")
	t.Logf("dump-tree: %d EXTENT_DATA items for the 32 MiB file", items)

	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	got := randomReads(t, fsys, "big", data, 10000, r)
	st := fsys.ExtentCacheStats()
	t.Logf("cache: %d entries for the file; stats %+v", got, st)
	if got != items {
		t.Fatalf("cached entries = %d, want %d (one per EXTENT_DATA item)", got, items)
	}
	if st.Hits < 9000 {
		t.Fatalf("only %d hits of 10000 lookups", st.Hits)
	}
}

// TestExtentCacheKernelOneExtent writes a 32 MiB file through the kernel,
// which stores it as one extent, and checks that the cache then holds exactly
// one entry after 10,000 random reads.
func TestExtentCacheKernelOneExtent(t *testing.T) {
	testutil.NeedRootLoop(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	testutil.Mkfs(t, img, 512<<20)
	mnt := testutil.LoopMount(t, img, "")
	r := rand.New(rand.NewSource(seed(t)))
	data := make([]byte, 32<<20)
	r.Read(data)
	if err := os.WriteFile(filepath.Join(mnt, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	exec.Command("sync").Run()
	testutil.Unmount(t, mnt)
	checktest.Image(t, img)
	items := testimg.DumpTreeCount(t, img, "fs", "EXTENT_DATA")
	t.Logf("dump-tree: %d EXTENT_DATA item(s)", items)

	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	got := randomReads(t, fsys, "big", data, 10000, r)
	t.Logf("cache: %d entries; stats %+v", got, fsys.ExtentCacheStats())
	if items == 1 && got != 1 {
		t.Fatalf("cached entries = %d, want 1", got)
	}
	if got != items {
		t.Fatalf("cached entries = %d, want %d (one per EXTENT_DATA item)", got, items)
	}
}

// BenchmarkRandomReadAt4K: random 4 KiB ReadAt on a 256 MiB file, reported
// as reads/s (data checksums verified).
func BenchmarkRandomReadAt4K(b *testing.B) {
	testutil.NeedProgs(b)
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	r := rand.New(rand.NewSource(1))
	data := make([]byte, 256<<20)
	r.Read(data)
	os.WriteFile(filepath.Join(src, "big"), data, 0o644)
	img := filepath.Join(dir, "img")
	testutil.MkfsRootdir(b, src, img, 1<<30)
	// warm the host page cache so both runs measure our read path, not the disk
	if f, err := os.Open(img); err == nil {
		io.Copy(io.Discard, f)
		f.Close()
	}
	for _, verify := range []bool{true, false} {
		name := "verify"
		if !verify {
			name = "noverify"
		}
		b.Run(name, func(b *testing.B) {
			fsys, err := gobtrfs.Open(img, &gobtrfs.Options{NoVerifyDataCsum: !verify})
			if err != nil {
				b.Fatal(err)
			}
			defer fsys.Close()
			f, _ := fsys.OpenFile("big")
			buf := make([]byte, 4096)
			b.SetBytes(4096)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				off := r.Int63n(int64(len(data))-4096) &^ 4095
				if _, err := f.ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
			b.ReportMetric(float64(f.CachedExtents()), "cached-extents")
		})
	}
}
