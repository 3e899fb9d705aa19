package fsops

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// TestCompressionProperty: btrfs.compression sets COMPRESS or NOCOMPRESS,
// rejects what the kernel rejects, and its algorithm wins over the
// mount's (zstd on a compress=lzo filesystem), "none" over compress=.
func TestCompressionProperty(t *testing.T) {
	img := newImage(t, imageOpts{})
	f := openImage(t, img, Options{Compress: compress.LZO})
	data := bytes.Repeat([]byte("compressible "), 20000)
	for _, c := range []struct {
		value string
		flags uint64
		alg   uint8
	}{
		{"zstd:3", item.InodeCompress, item.CompressZstd},
		{"zlib", item.InodeCompress, item.CompressZlib},
		{"none", item.InodeNoCompress, item.CompressNone},
		{"", 0, item.CompressLZO}, // removed: the mount's compress=lzo
	} {
		id, err := f.Create(TopLevel, "f"+c.value, 0o644, 0, 0, 0)
		must(t, err)
		must(t, f.SetXattr(id, propCompression, []byte(c.value), 0))
		x, err := f.Stat(id)
		must(t, err)
		if x.Flags&(item.InodeCompress|item.InodeNoCompress) != c.flags {
			t.Errorf("%q: flags %#x, want %#x", c.value, x.Flags, c.flags)
		}
		_, err = f.WriteAt(id, 0, data)
		must(t, err)
		if es := extentsOf(t, f, id); len(es) == 0 || es[0].Compression != c.alg {
			t.Errorf("%q: extents %+v, want compression %d", c.value, es, c.alg)
		}
	}
	id, err := f.Create(TopLevel, "bad", 0o644, 0, 0, 0)
	must(t, err)
	if err := f.SetXattr(id, propCompression, []byte("bogus"), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("bogus value: %v, want EINVAL", err)
	}
	if err := f.SetXattr(id, "btrfs.other", []byte("x"), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("unknown property: %v, want EINVAL", err)
	}
	if err := f.RemoveXattr(id, propCompression); !errors.Is(err, syscall.ENODATA) {
		t.Errorf("remove unset: %v, want ENODATA", err)
	}
	_, err = f.Setattr(id, SetAttr{Valid: SetFlags, Flags: item.InodeNoDataCow | item.InodeNoDataSum})
	must(t, err)
	if err := f.SetXattr(id, propCompression, []byte("zstd"), 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("NODATACOW file: %v, want EINVAL", err)
	}
	must(t, f.Close())
	checktest.Image(t, img)
}
