package fusefs

import (
	"crypto/sha256"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// zeroRangeReport zeroes ranges (inside the file, across and past its
// end, with and without KEEP_SIZE, on data written back or still
// buffered) and reports contents, sizes, blocks and times.
func zeroRangeReport(t *testing.T, dir string) string {
	var b strings.Builder
	data := make([]byte, 64<<10)
	rand.New(rand.NewSource(1)).Read(data)
	cases := []struct {
		name      string
		off, n    int64
		mode      int
		synced    bool
		fileBytes int
	}{
		{"middle, partial sectors", 1000, 20000, unix.FALLOC_FL_ZERO_RANGE, true, len(data)},
		{"middle, buffered", 1000, 20000, unix.FALLOC_FL_ZERO_RANGE, false, len(data)},
		{"whole sectors", 8192, 16384, unix.FALLOC_FL_ZERO_RANGE, true, len(data)},
		{"across the end", 60000, 20000, unix.FALLOC_FL_ZERO_RANGE, true, len(data)},
		{"across the end, keep size", 60000, 20000, unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE, true, len(data)},
		{"past the end", 100000, 8192, unix.FALLOC_FL_ZERO_RANGE, true, len(data)},
		{"small inline file", 2, 3, unix.FALLOC_FL_ZERO_RANGE, true, 100},
		{"empty file", 0, 4096, unix.FALLOC_FL_ZERO_RANGE, true, 0},
		{"with punch hole", 0, 4096, unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE, true, len(data)},
	}
	for i, c := range cases {
		p := filepath.Join(dir, fmt.Sprint("f", i))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(data[:c.fileBytes])
		if c.synced {
			f.Sync()
		}
		before := stamp(t, p)
		tick()
		err = unix.Fallocate(int(f.Fd()), uint32(c.mode), c.off, c.n)
		f.Close()
		after := stamp(t, p)
		got, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s: %s, size %d, blocks %d, sha256 %x, mtime %s, ctime %s\n", c.name, errName(err), after.Size,
			after.Blocks, sha256.Sum256(got), changed(before.Mtim, after.Mtim), changed(before.Ctim, after.Ctim))
	}
	return b.String()
}

// TestZeroRangeLikeKernel: generic/008, 009. FALLOC_FL_ZERO_RANGE as on
// kernel btrfs: zeros read back, space stays allocated, the size grows
// unless KEEP_SIZE.
func TestZeroRangeLikeKernel(t *testing.T) {
	sideBySide(t, "", Options{}, zeroRangeReport)
}
