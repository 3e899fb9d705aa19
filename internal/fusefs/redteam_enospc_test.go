package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOrphansAtENOSPC: many open files unlinked, then the filesystem
// filled to ENOSPC, then the files closed: every orphan is deleted at its
// last close (a delete needs no new space on the kernel either: it uses
// the global reserve), its space comes back, and writes succeed again.
func TestOrphansAtENOSPC(t *testing.T) {
	needFuse(t)
	img := newImage(t, 128<<20)
	tm := mountImage(t, img, Options{})
	const n = 200
	var fds []int
	blob := bytes.Repeat([]byte("orphan "), 2000) // 14 KB: not inline
	for i := 0; i < n; i++ {
		p := tm.path(fmt.Sprintf("o%03d", i))
		must(t, os.WriteFile(p, blob, 0o644))
		fd, err := unix.Open(p, unix.O_RDONLY, 0)
		must(t, err)
		fds = append(fds, fd)
		must(t, os.Remove(p))
	}
	must(t, tm.Sync())
	// fill
	big := bytes.Repeat([]byte{0x5a}, 1<<20)
	filled := 0
	for i := 0; ; i++ {
		f, err := os.Create(tm.path(fmt.Sprintf("fill%d", i)))
		if err != nil {
			break
		}
		_, werr := f.Write(big)
		serr := f.Sync()
		f.Close()
		if werr != nil || serr != nil {
			// what writeback could not store: gone with its file (a
			// failed writeback is the limit of the writeback cache,
			// not what is tested here)
			must(t, os.Remove(tm.path(fmt.Sprintf("fill%d", i))))
			break
		}
		filled++
	}
	t.Logf("filled %d MiB", filled)
	for _, fd := range fds {
		if err := unix.Close(fd); err != nil {
			t.Errorf("close of an orphan: %v", err)
		}
	}
	must(t, tm.Sync())
	if msgs := tm.logBuf.String(); msgs != "" {
		t.Logf("daemon said:\n%s", msgs)
	}
	must(t, tm.Sync())
	o := orphanItemsAll(t, img)
	if len(o) != 0 {
		t.Errorf("%d ORPHAN_ITEMs left after every orphan was closed, at ENOSPC: %v", len(o), o[:min(3, len(o))])
	}
	finish(t, tm, img)
}
