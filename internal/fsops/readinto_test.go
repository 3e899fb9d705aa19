package fsops

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestReadIntoDirtyBuffer: ReadInto fills a buffer that holds an earlier
// request's bytes (go-fuse reuses them): holes, preallocated extents, an
// inline extent's tail and the bytes past the end of the file all read as
// zeros, data as written, uncommitted and committed alike; the inode item
// it returns is the file's.
func TestReadIntoDirtyBuffer(t *testing.T) {
	img := newImage(t, imageOpts{})
	f := openImage(t, img, Options{})
	defer f.Close()
	root := TopLevel
	data := make([]byte, 64<<10)
	rand.New(rand.NewSource(7)).Read(data)

	big, err := f.Create(root, "big", 0o644, 0, 0, 0)
	must(t, err)
	// data | hole | prealloc | data, size not sector-aligned
	_, err = f.WriteAt(big, 0, data[:16<<10])
	must(t, err)
	must(t, f.Fallocate(big, FallocKeepSize, 32<<10, 16<<10))
	_, err = f.WriteAt(big, 48<<10, data[48<<10:60<<10+100])
	must(t, err)
	small, err := f.Create(root, "small", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(small, 0, []byte("inline"))
	must(t, err)

	want := func(id ondisk.InodeRef) []byte {
		if id == small {
			return []byte("inline")
		}
		w := make([]byte, 60<<10+100)
		copy(w, data[:16<<10])
		copy(w[48<<10:], data[48<<10:60<<10+100])
		return w
	}
	check := func(when string) {
		for _, id := range []ondisk.InodeRef{big, small} {
			w := want(id)
			for _, c := range [][2]int{{0, 4096}, {0, len(w) + 8192}, {12 << 10, 8 << 10}, {30 << 10, 20 << 10}, {60 << 10, 4096}, {3, 4}, {len(w) + 1, 10}} {
				buf := bytes.Repeat([]byte{0xa5}, c[1])
				n, x, err := f.ReadInto(id, uint64(c[0]), buf)
				must(t, err)
				if x.Size != uint64(len(w)) {
					t.Fatalf("%s: %v: inode size %d, want %d", when, id, x.Size, len(w))
				}
				var exp []byte
				if c[0] < len(w) {
					exp = w[c[0]:min(c[0]+c[1], len(w))]
				}
				if n != len(exp) || !bytes.Equal(buf[:n], exp) {
					t.Fatalf("%s: %v: read %d+%d: got %d bytes, want %d, equal %v", when, id, c[0], c[1], n, len(exp), bytes.Equal(buf[:n], exp))
				}
			}
		}
	}
	check("uncommitted")
	must(t, f.Commit())
	check("committed")
}
