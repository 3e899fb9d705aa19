package fsops

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// dataExtents returns id's extents with disk space (regular and
// preallocated), in file order.
func dataExtents(t *testing.T, f *FS, id ondisk.InodeRef) []fext {
	t.Helper()
	var out []fext
	for _, e := range extentsOf(t, f, id) {
		if !e.IsInline() && e.DiskBytenr != 0 {
			out = append(out, e)
		}
	}
	return out
}

// appender writes a file's content in pieces and keeps what it wrote.
type appender struct {
	t    *testing.T
	f    *FS
	id   ondisk.InodeRef
	data []byte
	rnd  *rand.Rand
}

func (a *appender) add(n, piece int) {
	a.t.Helper()
	for done := 0; done < n; done += piece {
		b := make([]byte, piece)
		a.rnd.Read(b)
		_, err := a.f.WriteAt(a.id, uint64(len(a.data)), b)
		must(a.t, err)
		a.data = append(a.data, b...)
	}
}

// TestStreamTailGrows: appends written back in pieces land as one extent
// (the tail grows on disk, tail.go) while nothing else can know the
// extent's size; after a commit, an fsync (the log holds the item), a
// clone (a second reference) or a truncate into it, the next append gets a
// new extent instead. The image passes btrfs check with data checksums and
// the kernel reads every byte back.
func TestStreamTailGrows(t *testing.T) {
	img := sizedImage(t, 512<<20, "-m", "single")
	f := openImage(t, img, Options{})
	// Fill mkfs's small first data chunk: an extent never crosses a block
	// group, and the stream should find room for 16 MiB in the next.
	fill, err := f.Create(TopLevel, "filler", 0o644, 0, 0, 0)
	must(t, err)
	filler := bytes.Repeat([]byte{0xf1}, 8<<20)
	_, err = f.WriteAt(fill, 0, filler)
	must(t, err)
	must(t, f.Commit())
	t.Logf("%s", spaceLine(f))
	id, err := f.Create(TopLevel, "stream", 0o644, 0, 0, 0)
	must(t, err)
	a := &appender{t: t, f: f, id: id, rnd: rand.New(rand.NewSource(1))}
	extents := func(want int, why string) []fext {
		t.Helper()
		es := dataExtents(t, f, id)
		if len(es) != want {
			for _, e := range es {
				t.Logf("extent at %d: disk %d+%d, offset %d, %d bytes", e.off, e.DiskBytenr, e.DiskNumBytes, e.Offset, e.NumBytes)
			}
			t.Fatalf("%s: %d extents, want %d", why, len(es), want)
		}
		return es
	}

	a.add(16<<20, 256<<10)
	es := extents(1, "16 MiB in 256 KiB appends")
	if e := es[0]; e.NumBytes != 16<<20 || e.DiskNumBytes != 16<<20 || e.RAMBytes != 16<<20 {
		t.Fatalf("grown extent: %+v, want 16 MiB on disk and in the file", e)
	}

	must(t, f.Commit())
	a.add(1<<20, 64<<10)
	extents(2, "an append after a commit")
	a.add(1<<20, 64<<10)
	es = extents(2, "a second append in that transaction")
	if es[1].NumBytes != 2<<20 {
		t.Fatalf("second extent holds %d bytes, want 2 MiB", es[1].NumBytes)
	}

	must(t, f.Fsync(id))
	a.add(1<<20, 64<<10)
	es = extents(3, "an append after an fsync")
	if es[1].DiskNumBytes != 2<<20 {
		t.Fatalf("the logged extent grew to %d bytes", es[1].DiskNumBytes)
	}

	must(t, f.Commit())
	a.add(1<<20, 1<<20)
	other, err := f.Create(TopLevel, "clone", 0o644, 0, 0, 0)
	must(t, err)
	end := uint64(len(a.data))
	must(t, f.Clone(id, end-1<<20, other, 0, 1<<20))
	a.add(1<<20, 1<<20)
	es = extents(5, "an append after a clone of the last extent")
	if es[3].DiskNumBytes != 1<<20 {
		t.Fatalf("the cloned extent grew to %d bytes", es[3].DiskNumBytes)
	}
	cloned := append([]byte(nil), a.data[end-1<<20:end]...)

	must(t, f.Truncate(id, uint64(len(a.data))-64<<10))
	a.data = a.data[:len(a.data)-64<<10]
	a.add(1<<20, 64<<10)
	extents(6, "an append after a truncate into the last extent")

	// A stream into a preallocated file: one regular item per preallocated
	// extent, the unwritten rest preallocated behind it.
	pre, err := f.Create(TopLevel, "prealloc", 0o644, 0, 0, 0)
	must(t, err)
	must(t, f.Fallocate(pre, 0, 0, 8<<20))
	p := &appender{t: t, f: f, id: pre, rnd: rand.New(rand.NewSource(2))}
	p.add(4<<20, 64<<10)
	ps := dataExtents(t, f, pre)
	if len(ps) != 2 || ps[0].Type != item.FileExtentReg || ps[0].NumBytes != 4<<20 ||
		ps[1].Type != item.FileExtentPrealloc || ps[1].NumBytes != 4<<20 || ps[0].DiskBytenr != ps[1].DiskBytenr {
		t.Fatalf("half-written preallocation: %+v, want 4 MiB regular then 4 MiB preallocated of one disk extent", ps)
	}
	p.add(4<<20, 64<<10)
	ps = dataExtents(t, f, pre)
	if len(ps) != 1 || ps[0].Type != item.FileExtentReg || ps[0].NumBytes != 8<<20 {
		t.Fatalf("written preallocation: %+v, want one 8 MiB regular item", ps)
	}

	// Out of order: each written piece joins its written neighbours, on
	// either side or both.
	ooo, err := f.Create(TopLevel, "prealloc-ooo", 0o644, 0, 0, 0)
	must(t, err)
	must(t, f.Fallocate(ooo, 0, 0, 6<<20))
	oooData := make([]byte, 6<<20)
	rand.New(rand.NewSource(3)).Read(oooData)
	for _, mib := range []uint64{1, 0, 3, 5, 2, 4} {
		_, err := f.WriteAt(ooo, mib<<20, oooData[mib<<20:(mib+1)<<20])
		must(t, err)
	}
	if ps := dataExtents(t, f, ooo); len(ps) != 1 || ps[0].Type != item.FileExtentReg || ps[0].NumBytes != 6<<20 {
		t.Fatalf("preallocation written out of order: %+v, want one 6 MiB regular item", ps)
	}

	for name, w := range map[ondisk.InodeRef][]byte{id: a.data, pre: p.data, other: cloned, ooo: oooData} {
		got, err := f.ReadAt(name, 0, len(w)+1)
		must(t, err)
		if !bytes.Equal(got, w) {
			t.Fatalf("%v: read back %d bytes, differ from the %d written", name, len(got), len(w))
		}
	}
	notAborted(t, f)
	must(t, f.Close())
	checktest.Image(t, img)
	kernelVerify(t, img, map[string][]byte{"stream": a.data, "prealloc": p.data, "clone": cloned, "filler": filler, "prealloc-ooo": oooData})
}
