package fusefs

import (
	"bytes"
	"math/rand"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCopyFileRangeReflinks: copy_file_range of aligned ranges shares the
// source's extents (a reflink); unaligned ranges are copied; FICLONE is
// refused by the kernel before it reaches FUSE.
func TestCopyFileRangeReflinks(t *testing.T) {
	needFuse(t)
	img := newImage(t, 512<<20)
	tm := mountImage(t, img, Options{})
	data := make([]byte, 4<<20)
	rand.New(rand.NewSource(1)).Read(data)
	must(t, os.WriteFile(tm.path("src"), data, 0o644))

	src, err := os.Open(tm.path("src"))
	must(t, err)
	dst, err := os.Create(tm.path("dst"))
	must(t, err)
	n, err := unix.CopyFileRange(int(src.Fd()), nil, int(dst.Fd()), nil, len(data), 0)
	if err != nil || n != len(data) {
		t.Fatalf("copy_file_range: %d %v", n, err)
	}
	// unaligned: a plain copy
	odd, err := os.Create(tm.path("odd"))
	must(t, err)
	offIn, offOut := int64(100), int64(7)
	n, err = unix.CopyFileRange(int(src.Fd()), &offIn, int(odd.Fd()), &offOut, 10000, 0)
	if err != nil || n != 10000 {
		t.Fatalf("unaligned copy_file_range: %d %v", n, err)
	}
	wantErrno(t, "FICLONE", unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())), unix.EOPNOTSUPP)
	src.Close()
	dst.Close()
	odd.Close()
	if b, _ := os.ReadFile(tm.path("dst")); !bytes.Equal(b, data) {
		t.Errorf("dst content differs")
	}
	if b, _ := os.ReadFile(tm.path("odd")); !bytes.Equal(b[7:], data[100:10100]) || len(b) != 10007 {
		t.Errorf("odd content differs")
	}
	var ss, ds unix.Stat_t
	must(t, unix.Stat(tm.path("src"), &ss))
	must(t, unix.Stat(tm.path("dst"), &ds))
	finish(t, tm, img)

	se := fileExtents(t, img, 5, ss.Ino)
	de := fileExtents(t, img, 5, ds.Ino)
	if len(se) == 0 || len(se) != len(de) {
		t.Fatalf("extents: src %d, dst %d", len(se), len(de))
	}
	for i := range se {
		if se[i].DiskBytenr != de[i].DiskBytenr || se[i].Offset != de[i].Offset {
			t.Errorf("extent %d: src at %d+%d, dst at %d+%d: not shared", i,
				se[i].DiskBytenr, se[i].Offset, de[i].DiskBytenr, de[i].Offset)
		}
	}
}
