package fusefs

import (
	"bytes"
	"math/rand"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestKernelPageCacheServesRereads: re-reads of a file the kernel holds
// (FOPEN_KEEP_CACHE) never reach the daemon, through the same open file or
// a new one, and every change made by another path than that file's
// write(2) still shows through it: copy_file_range into it (a reflink the
// daemon makes), a hole punched and an O_DIRECT write through other open
// files, a truncate by name.
func TestKernelPageCacheServesRereads(t *testing.T) {
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	const size = 1 << 20
	data := make([]byte, size)
	rand.New(rand.NewSource(3)).Read(data)
	must(t, os.WriteFile(tm.path("f"), data, 0o644))
	other := make([]byte, 256<<10)
	rand.New(rand.NewSource(4)).Read(other)
	must(t, os.WriteFile(tm.path("g"), other, 0o644))
	must(t, tm.Sync())

	f, err := os.Open(tm.path("f"))
	must(t, err)
	defer f.Close()
	readAll := func(what string, want []byte) {
		t.Helper()
		got := make([]byte, len(want)+4096)
		n, err := f.ReadAt(got, 0)
		if n != len(want) || !bytes.Equal(got[:n], want) {
			t.Fatalf("%s: read %d bytes (%v), want %d; equal %v", what, n, err, len(want), bytes.Equal(got[:min(n, len(want))], want[:min(n, len(want))]))
		}
	}
	readAll("first read", data)
	before := tm.RequestStats().Reads
	readAll("re-read", data)
	f2, err := os.Open(tm.path("f"))
	must(t, err)
	buf := make([]byte, size)
	if _, err := f2.ReadAt(buf, 0); err != nil || !bytes.Equal(buf, data) {
		t.Fatalf("read through a second open: %v", err)
	}
	f2.Close()
	if n := tm.RequestStats().Reads - before; n != 0 {
		t.Errorf("%d READ requests reached the daemon for re-reads of cached pages, want 0", n)
	}

	// copy_file_range of g's first 128 KiB to f at 64 KiB (a reflink)
	g, err := os.Open(tm.path("g"))
	must(t, err)
	defer g.Close()
	w, err := os.OpenFile(tm.path("f"), os.O_WRONLY, 0)
	must(t, err)
	defer w.Close()
	offIn, offOut := int64(0), int64(64<<10)
	if n, err := unix.CopyFileRange(int(g.Fd()), &offIn, int(w.Fd()), &offOut, 128<<10, 0); err != nil || n != 128<<10 {
		t.Fatalf("copy_file_range: %d %v", n, err)
	}
	copy(data[64<<10:], other[:128<<10])
	readAll("after copy_file_range", data)

	// a hole punched through another open file
	must(t, unix.Fallocate(int(w.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 256<<10, 64<<10))
	clear(data[256<<10 : 320<<10])
	readAll("after punching a hole", data)

	// an O_DIRECT write through another open file
	d, err := os.OpenFile(tm.path("f"), os.O_WRONLY|unix.O_DIRECT, 0)
	must(t, err)
	mem, err := unix.Mmap(-1, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE) // aligned
	must(t, err)
	defer unix.Munmap(mem)
	copy(mem, other[128<<10:])
	if _, err := d.WriteAt(mem, 512<<10); err != nil {
		t.Fatalf("O_DIRECT write: %v", err)
	}
	d.Close()
	copy(data[512<<10:], mem)
	readAll("after an O_DIRECT write", data)

	// a truncate by name
	must(t, os.Truncate(tm.path("f"), 700<<10))
	readAll("after truncate", data[:700<<10])
}
