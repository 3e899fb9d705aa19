package fusefs

import (
	"bytes"
	"math/rand"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/inode"
)

// TestStreamExtentsLarge: a 4 KiB write stream through the mount (the
// kernel's writeback cache sends it as WRITEs of up to 1 MiB, served
// concurrently) with a dirty limit far below the file's size lands as a few
// large extents, not one per background writeback: background writeback
// leaves the end of a stream that is still arriving, and each writeback
// grows the file's last extent on disk. Into a preallocated file, the
// written bytes become one regular item per preallocated extent. The image
// passes btrfs check and the kernel reads the same bytes.
func TestStreamExtentsLarge(t *testing.T) {
	needFuse(t)
	const size = 64 << 20
	img := newImage(t, 1<<30)
	tm := mountImage(t, img, Options{DirtyLimit: 16 << 20})
	data := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(data)
	stream := func(name string, prealloc bool) uint64 {
		f, err := os.Create(tm.path(name))
		must(t, err)
		if prealloc {
			must(t, unix.Fallocate(int(f.Fd()), 0, 0, size))
		}
		for off := 0; off < size; off += 4096 {
			if _, err := f.Write(data[off : off+4096]); err != nil {
				t.Fatalf("write %s at %d: %v", name, off, err)
			}
		}
		must(t, f.Close())
		var st unix.Stat_t
		must(t, unix.Stat(tm.path(name), &st))
		return st.Ino
	}
	plain := stream("plain", false)
	pre := stream("prealloc", true)
	for _, name := range []string{"plain", "prealloc"} {
		if b, err := os.ReadFile(tm.path(name)); err != nil || !bytes.Equal(b, data) {
			t.Fatalf("%s through the mount: %d bytes (%v), differ from the %d written", name, len(b), err, size)
		}
	}
	finish(t, tm, img)

	for _, c := range []struct {
		name string
		ino  uint64
	}{{"plain", plain}, {"prealloc", pre}} {
		var n, total, largest uint64
		for _, e := range fileExtents(t, img, 5, c.ino) {
			if e.Type == inode.ExtentInline || e.DiskBytenr == 0 {
				continue
			}
			n++
			total += e.NumBytes
			largest = max(largest, e.NumBytes)
			t.Logf("%s: extent at %d: %d bytes, disk %d+%d (offset %d)", c.name, e.FileOffset, e.NumBytes, e.DiskBytenr, e.DiskNumBytes, e.Offset)
		}
		if total != size {
			t.Fatalf("%s: extents hold %d bytes, want %d", c.name, total, size)
		}
		// Background writeback hands the engine at most 8 MiB at a time:
		// one extent each before extents grew. Into a preallocation the
		// written items join (btrfs_mark_extent_written): large on average.
		// A plain stream's layout depends on how the kernel's writeback
		// pages interleave with the flusher (a hole still arriving cuts
		// it), so only growth past one span is required there.
		avg := total / n
		t.Logf("%s: %d extents of %d MiB on average (largest %d MiB)", c.name, n, avg>>20, largest>>20)
		if c.name == "prealloc" && avg < 16<<20 {
			t.Errorf("%s: %d extents of %d MiB on average (largest %d MiB), want >= 16 MiB", c.name, n, avg>>20, largest>>20)
		}
		if largest <= 8<<20 {
			t.Errorf("%s: largest extent %d MiB: no extent grew past one 8 MiB writeback span", c.name, largest>>20)
		}
	}
}
