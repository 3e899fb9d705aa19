package gobtrfs_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// findAll returns the offsets in the image file img at which pat occurs.
func findAll(t *testing.T, img string, pat []byte) []int64 {
	t.Helper()
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	var at []int64
	for off := 0; ; {
		i := bytes.Index(raw[off:], pat)
		if i < 0 {
			return at
		}
		at = append(at, int64(off+i))
		off += i + 1
	}
}

// damage flips bytes at off of the image file (as a disk would, under the
// writer that has it open).
func damage(t *testing.T, img string, off int64) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 16)
	f.ReadAt(b, off)
	for i := range b {
		b[i] ^= 0x5a
	}
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestRWReadVerifiesData: RW.ReadFile checks data against the csum tree
// (also checksums written in the running transaction, not committed yet)
// and falls back to the other copy of DUP data; with every copy bad it
// fails with a DataError (ErrCorrupt) naming inode, file offset and
// logical address, and other files still read. Before, RW.ReadFile
// returned the damaged bytes.
func TestRWReadVerifiesData(t *testing.T) {
	for _, tc := range []struct {
		profile string
		commit  bool
	}{{"dup", true}, {"dup", false}, {"single", true}} {
		name := tc.profile
		if !tc.commit {
			name += "-uncommitted"
		}
		t.Run(name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "rw.img")
			testutil.Mkfs(t, img, 256<<20, "-d", tc.profile, "-m", "dup")
			w, err := gobtrfs.OpenRW(img, nil)
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					w.Close()
				}
			}()
			rng := rand.New(rand.NewSource(1))
			data := make([]byte, 64<<10)
			rng.Read(data)
			other := bytes.Repeat([]byte("other file "), 1000)
			if err := w.WriteFile("/f", data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := w.WriteFile("/g", other, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.commit {
				if err := w.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			// the third sector of /f, on disk once per copy
			const sector = 2 * 4096
			at := findAll(t, img, data[sector:sector+4096])
			want := map[string]int{"dup": 2, "single": 1}[tc.profile]
			if len(at) != want {
				t.Fatalf("sector found %d times in the image, want %d", len(at), want)
			}
			damage(t, img, at[0]+100)
			got, err := w.ReadFile("/f")
			if tc.profile == "dup" {
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("DUP: copy 1 damaged, read gave err %v (equal %v); want the good copy", err, bytes.Equal(got, data))
				}
				damage(t, img, at[1]+100)
				_, err = w.ReadFile("/f")
			}
			var de *gobtrfs.DataError
			if !errors.As(err, &de) || !errors.Is(err, gobtrfs.ErrCorrupt) {
				t.Fatalf("every copy damaged: got %v, want a DataError that is ErrCorrupt", err)
			}
			t.Logf("error: %v", err)
			if de.FileOffset != sector || de.Ino < 256 || de.Logical == 0 ||
				!strings.Contains(err.Error(), "file offset 8192") {
				t.Errorf("error names inode %d, file offset %d, logical %d", de.Ino, de.FileOffset, de.Logical)
			}
			if b, err := w.ReadFile("/g"); err != nil || !bytes.Equal(b, other) {
				t.Errorf("other file: %v", err)
			}
			// the filesystem keeps working
			if err := w.WriteFile("/h", []byte("after"), 0o644); err != nil {
				t.Fatal(err)
			}
			closed = true
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checktest.Metadata(t, img) // the damaged data sector stays damaged
		})
	}
}

// TestRWWriteSkipsInvalidCopy: copy 1 of the csum tree leaf (DUP metadata)
// is replaced by a block with a valid checksum whose csum item key is not
// sector-aligned, which the kernel's tree-checker refuses. A write must not
// COW that copy into the new tree: it reads copy 2, and afterwards the image
// is clean for btrfs check and mounts in the kernel. Before, the writer took
// copy 1 and the kernel refused the result ("failed to load root csum").
func TestRWWriteSkipsInvalidCopy(t *testing.T) {
	img := filepath.Join(t.TempDir(), "csum.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.Repeat([]byte("first file, checksummed "), 2000)
	if err := w.WriteFile("/a", first, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checktest.Image(t, img)

	leaf, slot, physical := csumLeaf(t, img)
	if len(physical) != 2 {
		t.Fatalf("csum leaf has %d copies, want 2 (DUP metadata)", len(physical))
	}
	misalignCsumKey(t, img, physical[0], slot)
	t.Logf("csum leaf %d: copy 1 at %d has an unaligned csum key", leaf, physical[0])
	testutil.CheckImage(t, img) // btrfs check reads copy 2: clean before the write

	w, err = gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := bytes.Repeat([]byte("second file "), 3000)
	if err := w.WriteFile("/b", second, 0o644); err != nil {
		w.Close()
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checktest.Image(t, img)
	if testutil.HaveRootLoop() {
		dir := testutil.LoopMount(t, img, "ro")
		for name, want := range map[string][]byte{"a": first, "b": second} {
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("kernel read of %s: %v", name, err)
			}
		}
		testutil.Unmount(t, dir)
	}
}

// csumLeaf returns the leaf of the csum tree holding its first checksum
// item, the item's slot and the physical offsets of the leaf's copies.
func csumLeaf(t *testing.T, img string) (ondisk.LogicalAddr, int, []int64) {
	t.Helper()
	info := testimg.OpenFS(t, img)
	tr, err := info.Tree(ondisk.CsumTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	p, ok, err := tr.SearchForward(ondisk.Key{ObjectID: ondisk.ExtentCsumObjectID, Type: ondisk.ExtentCsumKey})
	if err != nil || !ok || p.Key().Type != ondisk.ExtentCsumKey {
		t.Fatalf("no csum item: %v", err)
	}
	leaf, slot := p.Leaf().Addr, p.Slots[0]
	copies, _, err := info.Chunks.Map(leaf, uint64(info.Super.NodeSize))
	if err != nil {
		t.Fatal(err)
	}
	var phys []int64
	for _, c := range copies {
		phys = append(phys, int64(c.Physical))
	}
	return leaf, slot, phys
}

// misalignCsumKey moves the key offset of the csum item at slot of the
// block copy at physical by half a sector and recomputes the block's
// checksum: only the tree-checker's item rules can tell it is bad.
func misalignCsumKey(t *testing.T, img string, physical int64, slot int) {
	t.Helper()
	info := testimg.OpenFS(t, img)
	b := make([]byte, info.Super.NodeSize)
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, physical); err != nil {
		t.Fatal(err)
	}
	h := ondisk.DecodeItemHeader(b, slot)
	if h.Key.Type != ondisk.ExtentCsumKey {
		t.Fatalf("slot %d holds %v", slot, h.Key)
	}
	h.Key.Offset += uint64(info.Super.SectorSize) / 2
	h.Encode(b, slot)
	info.Csum.SetBlock(b)
	if _, err := f.WriteAt(b, physical); err != nil {
		t.Fatal(err)
	}
}

// TestRWWriteRefusesInvalidBlock: with both copies of the csum leaf failing
// the tree-checker, a write that needs the leaf fails with ErrCorrupt naming
// the block, and what reaches the disk is no worse for btrfs check.
func TestRWWriteRefusesInvalidBlock(t *testing.T) {
	img := filepath.Join(t.TempDir(), "csum.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("/a", bytes.Repeat([]byte("first file "), 4000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	leaf, slot, physical := csumLeaf(t, img)
	for _, p := range physical {
		misalignCsumKey(t, img, p, slot)
	}
	before, ourBefore := checkErrors(t, img), ourCheckErrors(t, img)

	w, err = gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = w.WriteFile("/b", bytes.Repeat([]byte("second file "), 3000), 0o644)
	cerr := w.Close()
	t.Logf("write: %v; close: %v", err, cerr)
	if err == nil {
		t.Fatal("write through an invalid csum leaf succeeded")
	}
	if !errors.Is(err, gobtrfs.ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprint(uint64(leaf))) {
		t.Errorf("error %v: want ErrCorrupt naming block %d", err, leaf)
	}
	if after := checkErrors(t, img); after > before {
		t.Errorf("btrfs check found %d errors before the write, %d after", before, after)
	}
	if after := ourCheckErrors(t, img); after > ourBefore {
		t.Errorf("our checker found %d errors before the write, %d after", ourBefore, after)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatalf("image no longer opens: %v", err)
	}
	fsys.Close()
}

// ourCheckErrors returns how many errors our checker reports for img.
func ourCheckErrors(t *testing.T, img string) int {
	t.Helper()
	rep, err := check.Image(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("our check:\n%s", rep)
	return strings.Count(rep.String(), "ERROR")
}

// checkErrors returns how many problem lines btrfs check --readonly prints
// for img.
func checkErrors(t *testing.T, img string) int {
	t.Helper()
	testutil.NeedProgs(t)
	r, _ := testutil.ProgsCheck(img)
	t.Logf("btrfs check: %d problem lines", len(r.Problems))
	return len(r.Problems)
}
