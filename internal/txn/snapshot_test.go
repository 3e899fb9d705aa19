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

// TestSnapshotShared makes a multi-level subvolume, snapshots it twice,
// changes every tree so shared blocks get COWed (turning to FULL_BACKREF
// and shared refs), deletes the original and one snapshot, and checks the
// image and the surviving trees' contents at every step.
func TestSnapshotShared(t *testing.T) {
	for _, args := range [][]string{{"-n", "4096"}, {"-n", "4096", "-O", "^skinny-metadata"}, {}} {
		t.Run(strings.Join(append([]string{"mkfs"}, args...), " "), func(t *testing.T) {
			img := mkfs(t, 512<<20, args...)
			r := rand.New(rand.NewSource(7))
			m := newModel()
			im := openImage(t, img)
			h := im.begin(t)
			o := newOp(t, h)
			m.nextID = 257
			o.createSubvol(257, "sv", 1000)
			s := &mSubvol{id: 257, name: "sv", index: 1000, files: map[ondisk.ObjectID]*mFile{}, next: 257}
			m.subvols[257] = s
			nfiles := 300
			if len(args) > 0 && args[1] == "4096" {
				nfiles = 2500 // three levels: shared nodes, not only leaves
			}
			for i := 0; i < nfiles; i++ {
				ino := s.next
				s.next++
				f := &mFile{name: fmt.Sprintf("f%d", ino)}
				o.createFile(257, ino, f.name)
				data := randBytes(r, 4096)
				addr, err := o.writeNew(257, ino, 0, data)
				o.must(err, "write")
				m.data[addr] = data
				f.exts = append(f.exts, mExt{0, addr, 4096})
				s.files[ino] = f
			}
			h.End()
			im.close(t)
			checktest.Image(t, img)

			im = openImage(t, img)
			h = im.begin(t)
			o = newOp(t, h)
			snap := func(src, id ondisk.ObjectID) {
				name := fmt.Sprintf("snap%d", id)
				o.snapshot(src, id, name, 2000+uint64(id), false)
				ns := &mSubvol{id: id, name: name, index: 2000 + uint64(id), files: map[ondisk.ObjectID]*mFile{},
					next: m.subvols[src].next}
				for ino, f := range m.subvols[src].files {
					ns.files[ino] = &mFile{name: f.name, exts: append([]mExt(nil), f.exts...)}
				}
				m.subvols[id] = ns
			}
			snap(257, 258)
			snap(258, 259)
			// Touch a few files of the original and the first snapshot, so
			// that some blocks stay shared and some are COWed from under
			// the others.
			for id, lo := range map[ondisk.ObjectID]int{257: 0, 258: nfiles / 2} {
				v := m.subvols[id]
				for i, ino := range v.inos() {
					if i < lo || i >= lo+20 {
						continue
					}
					o.deleteFile(id, ino, v.files[ino].name)
					delete(v.files, ino)
				}
			}
			h.End()
			im.close(t)
			checktest.Image(t, img)
			out, _ := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "extent", img).CombinedOutput()
			full := strings.Count(string(out), "FULL_BACKREF")
			t.Logf("extent tree: %d FULL_BACKREF, %d shared block backrefs, %d shared data backrefs", full,
				strings.Count(string(out), "shared block backref"), strings.Count(string(out), "shared data backref"))
			if full == 0 {
				t.Errorf("no block became FULL_BACKREF")
			}
			im = openImage(t, img)
			m.verify(t, im)
			h = im.begin(t)
			o = newOp(t, h)
			o.deleteSubvol(257, "sv", 1000)
			delete(m.subvols, 257)
			h.End()
			im.close(t)
			checktest.Image(t, img)
			im = openImage(t, img)
			m.verify(t, im)
			h = im.begin(t)
			o = newOp(t, h)
			o.deleteSubvol(259, "snap259", 2259)
			delete(m.subvols, 259)
			h.End()
			im.close(t)
			checktest.Image(t, img)
			im = openImage(t, img)
			m.verify(t, im)
			im.close(t)
		})
	}
}

// TestManySnapshots shares one subvolume's blocks with 130 snapshots, more
// tree block references than fit inline (keyed TREE_BLOCK_REF items), then
// deletes them all.
func TestManySnapshots(t *testing.T) {
	img := mkfs(t, 512<<20, "-n", "4096")
	r := rand.New(rand.NewSource(2))
	m := newModel()
	im := openImage(t, img)
	h := im.begin(t)
	o := newOp(t, h)
	o.createSubvol(257, "sv", 1000)
	s := &mSubvol{id: 257, name: "sv", index: 1000, files: map[ondisk.ObjectID]*mFile{}, next: 257}
	m.subvols[257] = s
	for i := 0; i < 200; i++ {
		ino := s.next
		s.next++
		f := &mFile{name: fmt.Sprintf("f%d", ino)}
		o.createFile(257, ino, f.name)
		data := randBytes(r, 4096)
		addr, err := o.writeNew(257, ino, 0, data)
		o.must(err, "write")
		m.data[addr] = data
		f.exts = []mExt{{0, addr, 4096}}
		s.files[ino] = f
	}
	h.End()
	const n = 130
	for i := 0; i < n; i++ {
		h = im.begin(t)
		id := ondisk.ObjectID(300 + i)
		newOp(t, h).snapshot(257, id, fmt.Sprintf("s%d", id), 2000+uint64(id), true)
		h.End()
	}
	im.close(t)
	checktest.Image(t, img)
	out, _ := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "extent", img).CombinedOutput()
	keyed := strings.Count(string(out), "TREE_BLOCK_REF")
	t.Logf("%d keyed TREE_BLOCK_REF items", keyed)
	if keyed == 0 {
		t.Error("no keyed tree block refs")
	}
	im = openImage(t, img)
	h = im.begin(t)
	o = newOp(t, h)
	for i := 0; i < n; i++ {
		id := ondisk.ObjectID(300 + i)
		o.deleteSubvol(id, fmt.Sprintf("s%d", id), 2000+uint64(id))
		if i == n/2 {
			h.End()
			im.commit(t)
			h = im.begin(t)
			o = newOp(t, h)
		}
	}
	h.End()
	im.close(t)
	checktest.Image(t, img)
	im = openImage(t, img)
	m.verify(t, im)
	im.close(t)
}
