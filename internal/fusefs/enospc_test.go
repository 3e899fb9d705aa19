package fusefs

import (
	"bytes"
	"os"
	"syscall"
	"testing"
)

// TestENOSPC: writing past the free space fails with ENOSPC (at write time:
// buffered data is space-checked when it is accepted); deleting still
// works, and the freed space can be written again.
func TestENOSPC(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	f, err := os.Create(tm.path("fill"))
	must(t, err)
	chunk := bytes.Repeat([]byte{0xab}, 1<<20)
	var werr error
	written := 0
	for i := 0; i < 400 && werr == nil; i++ {
		_, werr = f.Write(chunk)
		if werr == nil {
			written++
		}
	}
	if werr == nil {
		werr = f.Sync()
	}
	wantErrno(t, "filling the filesystem", werr, syscall.ENOSPC)
	f.Close()
	t.Logf("wrote %d MiB before ENOSPC", written)
	if written < 100 {
		t.Errorf("only %d MiB fit in a 256 MiB filesystem", written)
	}
	must(t, os.Remove(tm.path("fill")))
	must(t, tm.Sync())
	must(t, os.WriteFile(tm.path("after"), bytes.Repeat([]byte{1}, 50<<20), 0o644))
	finish(t, tm, img)
}
