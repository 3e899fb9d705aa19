package pagecache

import (
	"bytes"
	"math/rand"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// hookLock runs between every range SyncEach writes: the moments a reader
// holding the lock shared gets in.
type hookLock struct{ between func() }

func (h *hookLock) Lock()   {}
func (h *hookLock) Unlock() { h.between() }

// TestSyncEachReadersSeeInFlight: between the ranges of a writeback,
// backend bytes overlaid with the cache (Overlay, DirtyEnd, CleanRanges)
// are the file, while writes and truncates land in the middle of it.
func TestSyncEachReadersSeeInFlight(t *testing.T) {
	defer func(d time.Duration) { lockSlice = d }(lockSlice)
	lockSlice = 0 // readers get in after every range
	b := &memBackend{files: map[ondisk.InodeRef][]byte{}}
	c := New(b, 0)
	k := ondisk.InodeRef{Root: 5, Ino: 257}
	rng := rand.New(rand.NewSource(1))
	var model []byte
	write := func(off int64, n int) {
		data := make([]byte, n)
		rng.Read(data)
		c.Write(k, off, data)
		if end := off + int64(n); end > int64(len(model)) {
			model = append(model, make([]byte, end-int64(len(model)))...)
		}
		copy(model[off:], data)
	}
	truncate := func(size int64) {
		if size < int64(len(model)) {
			model = model[:size]
			c.Truncate(k, size)
			f := b.files[k] // the filesystem sets the size on disk
			if int64(len(f)) > size {
				f = f[:size]
			}
			b.files[k] = append(f, make([]byte, size-int64(len(f)))...)
		}
	}
	check := func(when string) {
		if end := max(int64(len(b.files[k])), c.DirtyEnd(k)); end != int64(len(model)) {
			t.Fatalf("%s: size %d, want %d", when, end, len(model))
		}
		got := make([]byte, len(model))
		copy(got, b.files[k])
		c.Overlay(k, got, 0)
		if !bytes.Equal(got, model) {
			t.Fatalf("%s: reader's view differs from the file", when)
		}
		// what CleanRanges sends to disk is on disk already
		disk := make([]byte, len(model)) // past the on-disk end a read gives zeros
		copy(disk, b.files[k])
		for _, r := range c.CleanRanges(k, 0, int64(len(model))) {
			if !bytes.Equal(disk[r[0]:r[1]], model[r[0]:r[1]]) {
				t.Fatalf("%s: clean range %v is not on disk", when, r)
			}
		}
	}
	for round := 0; round < 20; round++ {
		for i := 0; i < 30; i++ {
			write(int64(rng.Intn(64))*4096, 1+rng.Intn(3*4096))
		}
		step := 0
		h := &hookLock{between: func() {
			check("between ranges")
			switch step++; {
			case step%5 == 0:
				write(int64(rng.Intn(64))*4096, 1+rng.Intn(8192))
			case step%7 == 0:
				truncate(int64(rng.Intn(64 * 4096)))
			}
			check("after a change between ranges")
		}}
		if err := c.SyncEach(h); err != nil {
			t.Fatal(err)
		}
		check("after the sync")
	}
}
