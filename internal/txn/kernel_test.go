package txn_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// needKernel skips unless the test can attach loop devices and mount btrfs.
func needKernel(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("kernel mount tests need root (loop devices, mount)")
	}
	for _, p := range []string{"losetup", "mount", "umount"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not found", p)
		}
	}
	needProgs(t)
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// mountImage attaches img to a loop device and mounts it with opts; the
// returned function unmounts and detaches (also registered with Cleanup).
func mountImage(t *testing.T, img, opts string) (string, func()) {
	t.Helper()
	loop := run(t, "losetup", "-f", "--show", img)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "btrfs", "-o", opts, loop, dir).CombinedOutput(); err != nil {
		exec.Command("losetup", "-d", loop).Run()
		dmesg, _ := exec.Command("sh", "-c", "dmesg | tail -20").CombinedOutput()
		t.Fatalf("mount -o %s %s: %v\n%s\ndmesg:\n%s", opts, img, err, out, dmesg)
	}
	done := false
	cleanup := func() {
		if done {
			return
		}
		done = true
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount: %v\n%s", err, out)
		}
		exec.Command("losetup", "-d", loop).Run()
	}
	t.Cleanup(cleanup)
	return dir, cleanup
}

// fileContent is a model file as the kernel reads it: extents at their
// offsets, zeros in the holes.
func (m *model) fileContent(f *mFile) []byte {
	b := make([]byte, f.end())
	for _, e := range f.exts {
		copy(b[e.off:], m.data[e.addr])
	}
	return b
}

// verifyMounted compares the mounted filesystem with the model.
func (m *model) verifyMounted(t *testing.T, dir string) {
	t.Helper()
	for _, id := range m.ids() {
		s := m.subvols[id]
		sd := dir
		if id != ondisk.FSTreeObjectID {
			sd = filepath.Join(dir, s.name)
		}
		for _, ino := range s.inos() {
			f := s.files[ino]
			got, err := os.ReadFile(filepath.Join(sd, f.name))
			if err != nil {
				t.Fatalf("kernel read of subvolume %d file %s: %v", id, f.name, err)
			}
			if !bytes.Equal(got, m.fileContent(f)) {
				t.Fatalf("kernel read of subvolume %d file %s: %d bytes differ from the model's %d",
					id, f.name, len(got), f.end())
			}
		}
	}
}

// TestKernelMount writes with this package, then has Linux mount the image
// read-only (reading back every file) and read-write (writing a file of its
// own), then writes with this package again on the image Linux changed;
// btrfs check runs after every step.
func TestKernelMount(t *testing.T) {
	needKernel(t)
	seed := testSeed(t)
	for _, args := range [][]string{{}, {"-n", "4096", "--csum", "xxhash"}, {"-R", "^free-space-tree", "-m", "single"}} {
		t.Run(strings.Join(append([]string{"mkfs"}, args...), " "), func(t *testing.T) {
			img := mkfs(t, 512<<20, args...)
			r := rand.New(rand.NewSource(seed))
			m := newModel()
			for round := 0; round < 2; round++ {
				im := openImage(t, img)
				m.randomOps(t, im, r, 120, true)
				im.close(t)
				checktest.Image(t, img)

				dir, umount := mountImage(t, img, "ro")
				m.verifyMounted(t, dir)
				umount()
				checktest.Image(t, img)

				dir, umount = mountImage(t, img, "rw")
				m.verifyMounted(t, dir)
				name := fmt.Sprintf("kernel%d", round)
				if err := os.WriteFile(filepath.Join(dir, name), randBytes(r, 300<<10), 0o644); err != nil {
					t.Fatal(err)
				}
				run(t, "sync")
				umount()
				checktest.Image(t, img)
				m.subvols[ondisk.FSTreeObjectID].next += 1000 // past Linux's new inode
			}
			im := openImage(t, img)
			m.verify(t, im)
			im.close(t)
		})
	}
}

// TestKernelMadeImage lets Linux populate an image (files, a subvolume, a
// snapshot, reflinks), then deletes and adds files and snapshots with this
// package, and has Linux mount the result again.
func TestKernelMadeImage(t *testing.T) {
	needKernel(t)
	seed := testSeed(t)
	img := mkfs(t, 512<<20)
	r := rand.New(rand.NewSource(seed))
	dir, umount := mountImage(t, img, "rw")
	for i := 0; i < 40; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("k%02d", i)), randBytes(r, r.Intn(600<<10)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "btrfs", "subvolume", "create", filepath.Join(dir, "ksub"))
	for i := 0; i < 10; i++ {
		os.WriteFile(filepath.Join(dir, "ksub", fmt.Sprintf("s%d", i)), randBytes(r, 100<<10), 0o644)
	}
	run(t, "cp", "--reflink=always", filepath.Join(dir, "k01"), filepath.Join(dir, "k01.clone"))
	run(t, "btrfs", "subvolume", "snapshot", dir, filepath.Join(dir, "ksnap"))
	run(t, "sync")
	umount()
	checktest.Image(t, img)

	// Delete half of the kernel's files in FS_TREE and add our own.
	im := openImage(t, img)
	h := im.begin(t)
	o := newOp(t, h)
	fst := o.tree(ondisk.FSTreeObjectID)
	type ent struct {
		index uint64
		name  string
		ino   ondisk.ObjectID
	}
	var ents []ent
	err := fst.Range(ondisk.Key{ObjectID: rootDir, Type: ondisk.DirIndexKey},
		ondisk.Key{ObjectID: rootDir, Type: ondisk.DirIndexKey, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			d, _, _ := item.DecodeDirItem(data)
			if d.Type == item.FTRegFile {
				ents = append(ents, ent{k.Offset, string(d.Name), d.Location.ObjectID})
			}
			return true
		})
	if err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for i, e := range ents {
		if i%2 == 0 {
			o.deleteEntry(5, e.ino, e.name, e.index)
			deleted[e.name] = true
		}
	}
	h.End()
	m := newModel()
	m.subvols[ondisk.FSTreeObjectID].next = 100000
	m.randomOps(t, im, r, 80, false)
	im.close(t)
	checktest.Image(t, img)

	dir, umount = mountImage(t, img, "rw")
	m.verifyMounted(t, dir)
	for _, e := range ents {
		_, err := os.Stat(filepath.Join(dir, e.name))
		if deleted[e.name] != os.IsNotExist(err) {
			t.Errorf("%s: deleted %v, stat %v", e.name, deleted[e.name], err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ksnap", "k00")); err != nil {
		t.Errorf("snapshot lost a file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "after"), randBytes(r, 1<<20), 0o644)
	run(t, "sync")
	umount()
	checktest.Image(t, img)
}

// deleteEntry deletes a regular file whose dir index is index (for files
// made by others, whose index is not their inode number).
func (o *op) deleteEntry(tree, ino ondisk.ObjectID, name string, index uint64) {
	o.t.Helper()
	t := o.tree(tree)
	var exts []struct {
		off uint64
		fi  item.FileExtentItem
	}
	o.must(t.Range(ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey},
		ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			fi, err := item.DecodeFileExtentItem(data)
			o.must(err, "decode extent")
			exts = append(exts, struct {
				off uint64
				fi  item.FileExtentItem
			}{k.Offset, fi})
			return true
		}), "list extents")
	for _, e := range exts {
		if e.fi.Type == item.FileExtentInline || e.fi.DiskBytenr == 0 {
			continue
		}
		o.must(o.h.DropDataRef(e.fi.DiskBytenr, e.fi.DiskNumBytes, tree, ino, e.off-e.fi.Offset), "drop data ref")
	}
	o.must(t.DeleteRange(o.a, ondisk.Key{ObjectID: ino}, ondisk.Key{ObjectID: ino, Type: 0xff, Offset: ^uint64(0)}),
		"delete items of %d", ino)
	o.unlink(t, name, index)
}
