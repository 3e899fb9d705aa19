package fsops

import (
	"bytes"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// bytenrs lists the disk extents behind a file, in file order.
func bytenrs(t *testing.T, f *FS, id ondisk.InodeRef) []uint64 {
	t.Helper()
	var out []uint64
	must(t, f.run(func(o *op) error {
		es, err := o.extents(id, 0, ^uint64(0))
		for _, e := range es {
			out = append(out, uint64(e.DiskBytenr))
		}
		return err
	}))
	return out
}

func TestNoCow(t *testing.T) {
	forConfigs(t, func(t *testing.T, img string, o imageOpts) {
		f := openImage(t, img, Options{})
		ss := int(f.SectorSize())
		// preallocated space is written in place and turns regular
		a, err := f.Create(TopLevel, "prealloc", 0o644, 0, 0, 0)
		must(t, err)
		sa := &shadow{t: t, f: f, id: a}
		sa.fallocate(0, 0, 16*ss)
		must(t, f.Commit())
		before := bytenrs(t, f, a)
		sa.write(4*ss, 2*ss, 'p')
		after := bytenrs(t, f, a)
		if len(before) != 1 || len(after) != 3 || after[0] != before[0] || after[1] != before[0] || after[2] != before[0] {
			t.Fatalf("prealloc write: extents %v -> %v, want the same disk extent split in 3", before, after)
		}
		// NODATACOW files are overwritten in place
		b, err := f.Create(TopLevel, "nocow", 0o644, 0, 0, 0)
		must(t, err)
		_, err = f.Setattr(b, SetAttr{Valid: SetFlags, Flags: item.InodeNoDataCow})
		must(t, err)
		sb := &shadow{t: t, f: f, id: b}
		sb.write(0, 8*ss, 'n')
		must(t, f.Commit())
		before = bytenrs(t, f, b)
		sb.write(ss+5, 100, 'o')
		if after := bytenrs(t, f, b); len(after) != 1 || after[0] != before[0] {
			t.Fatalf("nodatacow overwrite: %v -> %v", before, after)
		}
		// ... unless a snapshot shares them
		_, err = f.Snapshot(5, TopLevel, "snap", false)
		must(t, err)
		sb.write(2*ss, 10, 's')
		if after := bytenrs(t, f, b); bytes.Equal(u64bytes(after), u64bytes(before)) {
			t.Fatalf("nodatacow write after a snapshot stayed in place: %v", after)
		}
		snapFile, _, err := f.Lookup(ondisk.InodeRef{Root: mustSnap(t, f), Ino: RootDirIno}, "nocow")
		must(t, err)
		got, err := f.ReadAt(snapFile, 0, 8*ss)
		must(t, err)
		if got[2*ss] == 's' {
			t.Fatal("snapshot sees a write made after it")
		}
		must(t, f.Close())
		checktest.Image(t, img)
	})
}

func mustSnap(t *testing.T, f *FS) ondisk.ObjectID {
	t.Helper()
	x, _, err := f.Lookup(TopLevel, "snap")
	must(t, err)
	return x.Root
}

func u64bytes(v []uint64) []byte {
	var b []byte
	for _, x := range v {
		for i := 0; i < 8; i++ {
			b = append(b, byte(x>>(8*i)))
		}
	}
	return b
}
