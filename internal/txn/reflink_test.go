package txn_test

import (
	"fmt"
	"math/rand"
	"os/exec"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestManyRefs references one data extent from hundreds of file extents
// (more than fit inline in its extent item, so keyed EXTENT_DATA_REF items
// are used), then drops them in random order across commits.
func TestManyRefs(t *testing.T) {
	for _, args := range [][]string{{}, {"-n", "4096"}} {
		t.Run(strings.Join(append([]string{"mkfs"}, args...), " "), func(t *testing.T) {
			img := mkfs(t, 256<<20, args...)
			r := rand.New(rand.NewSource(3))
			m := newModel()
			s := m.subvols[ondisk.FSTreeObjectID]
			im := openImage(t, img)
			h := im.begin(t)
			o := newOp(t, h)
			o.createFile(5, 257, "src")
			data := randBytes(r, 8192)
			addr, err := o.writeNew(5, 257, 0, data)
			o.must(err, "write")
			m.data[addr] = data
			s.files[257] = &mFile{name: "src", exts: []mExt{{0, addr, 8192}}}
			s.next = 258
			for i := 0; i < 300; i++ {
				ino := s.next
				s.next++
				f := &mFile{name: "r" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)}
				o.createFile(5, ino, f.name)
				for j := 0; j < 1+i%3; j++ {
					off := uint64(j) * 8192
					o.addExtent(5, ino, off, addr, 8192)
					f.exts = append(f.exts, mExt{off, addr, 8192})
				}
				s.files[ino] = f
				if i%100 == 99 {
					h.End()
					im.commit(t)
					h = im.begin(t)
					o = newOp(t, h)
				}
			}
			h.End()
			im.close(t)
			checktest.Image(t, img)
			out, _ := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "extent", img).CombinedOutput()
			keyed := strings.Count(string(out), "EXTENT_DATA_REF")
			t.Logf("%d keyed EXTENT_DATA_REF items", keyed)
			if keyed == 0 {
				t.Errorf("no keyed data refs")
			}
			for round := 0; len(s.files) > 0; round++ {
				im = openImage(t, img)
				h = im.begin(t)
				o = newOp(t, h)
				for _, ino := range s.inos() {
					if r.Intn(3) == 0 || round > 3 {
						o.deleteFile(5, ino, s.files[ino].name)
						delete(s.files, ino)
					}
				}
				h.End()
				im.close(t)
				checktest.Image(t, img)
				im = openImage(t, img)
				m.verify(t, im)
				im.close(t)
			}
			// The extent is gone, and so are its checksums.
			out, _ = exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "extent", img).CombinedOutput()
			if strings.Contains(string(out), "DATA_REF") || strings.Contains(string(out), "flags DATA\n") {
				t.Errorf("data references left:\n%s", out)
			}
		})
	}
}

// TestCsumItems writes adjacent extents (their checksums share one item),
// frees the middle one (the item is split) and the first (trimmed), and
// has btrfs check verify every data checksum.
func TestCsumItems(t *testing.T) {
	img := mkfs(t, 256<<20, "--csum", "sha256")
	r := rand.New(rand.NewSource(4))
	im := openImage(t, img)
	h := im.begin(t)
	o := newOp(t, h)
	for i := 0; i < 3; i++ {
		ino := ondisk.ObjectID(257 + i)
		o.createFile(5, ino, fmt.Sprintf("f%d", i))
		_, err := o.writeNew(5, ino, 0, randBytes(r, 64<<10))
		o.must(err, "write")
	}
	h.End()
	im.close(t)
	checktest.Image(t, img)
	count := func() int {
		out, _ := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "csum", img).CombinedOutput()
		return strings.Count(string(out), "EXTENT_CSUM EXTENT_CSUM")
	}
	if n := count(); n != 1 {
		t.Errorf("%d csum items for three adjacent extents", n)
	}
	for i, want := range []int{2, 1} {
		im = openImage(t, img)
		h = im.begin(t)
		ino := ondisk.ObjectID(258 - i) // the middle one, then the first
		newOp(t, h).deleteFile(5, ino, fmt.Sprintf("f%d", 1-i))
		h.End()
		im.close(t)
		checktest.Image(t, img)
		if n := count(); n != want {
			t.Errorf("after deleting f%d: %d csum items, want %d", 1-i, n, want)
		}
	}
}
