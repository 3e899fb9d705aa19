package scrub_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/scrub"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// pattern is the content of the file whose data is damaged: distinctive,
// so both of its DUP copies are found in the raw image.
func pattern() []byte {
	return bytes.Repeat([]byte("scrub-victim-data-0123456789abcdef"), 4096)[:128<<10]
}

// dupImage makes an image with DUP metadata and DUP data holding
// /dir/victim and a few other files (mkfs.btrfs --rootdir).
func dupImage(t *testing.T) string {
	t.Helper()
	testutil.NeedProgs(t)
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "dir"), 0o755)
	if err := os.WriteFile(filepath.Join(src, "dir", "victim"), pattern(), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(src, n), bytes.Repeat([]byte{byte('A' + i)}, 10000*(i+1)), 0o644)
	}
	img := filepath.Join(t.TempDir(), "dup.img")
	testutil.MkfsRootdir(t, src, img, 256<<20, "-m", "dup", "-d", "dup")
	return img
}

func runScrub(t *testing.T, img string, repair bool) *scrub.Report {
	t.Helper()
	dev, err := blockdev.OpenFile(img, !repair)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scrub.Run(fi, scrub.Options{Repair: repair})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// flipAt flips one byte of the image at off.
func flipAt(t *testing.T, img string, off int64) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// fsTreeRootCopies is the physical offsets of the copies of the top-level
// subvolume's root block.
func fsTreeRootCopies(t *testing.T, img string) []ondisk.PhysicalAddr {
	t.Helper()
	dev, err := blockdev.OpenFile(img, true)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ri, _, err := fi.RootItem(ondisk.FSTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	copies, _, err := fi.Chunks.Map(ri.Bytenr, uint64(fi.Super.NodeSize))
	if err != nil {
		t.Fatal(err)
	}
	var out []ondisk.PhysicalAddr
	for _, c := range copies {
		out = append(out, c.Physical)
	}
	return out
}

func TestScrubCleanImage(t *testing.T) {
	img := dupImage(t)
	rep := runScrub(t, img, false)
	if !rep.OK() || rep.NumErrors != 0 {
		t.Fatalf("clean image: %s, errors %v, walk errors %v", rep.Summary(), rep.Errors, rep.WalkErrors)
	}
	if rep.DataBytes < 2*uint64(len(pattern())) || rep.TreeBytes == 0 || rep.TreeExtents == 0 || rep.DataExtents < 4 {
		t.Errorf("scrubbed %d data bytes in %d extents, %d tree bytes in %d blocks: less than the image holds",
			rep.DataBytes, rep.DataExtents, rep.TreeBytes, rep.TreeExtents)
	}
}

func TestScrubFindsAndRepairsDupCopies(t *testing.T) {
	img := dupImage(t)
	raw, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	// one copy of the file's data, one copy of the tree block holding it
	p := pattern()[:4096]
	first := bytes.Index(raw, p)
	second := bytes.Index(raw[first+1:], p)
	if first < 0 || second < 0 {
		t.Fatalf("the file's data is not stored twice (DUP): copies at %d and %d", first, second)
	}
	flipAt(t, img, int64(first)+100)
	meta := fsTreeRootCopies(t, img)
	if len(meta) != 2 {
		t.Fatalf("fs tree root has %d copies, want 2 (DUP)", len(meta))
	}
	flipAt(t, img, int64(meta[0])+300)
	if r, ran := testutil.ProgsCheck(img, "--check-data-csum"); ran && r.Clean() {
		t.Fatalf("btrfs check --check-data-csum finds nothing in the damaged image:\n%s", r.Output)
	}

	rep := runScrub(t, img, false)
	if rep.CsumErrors != 1 || rep.VerifyErrors != 4 || rep.NumErrors != 2 || rep.Corrected != 0 || rep.Uncorrectable != 0 || rep.OK() {
		t.Fatalf("damaged image: %s, corrected %d, uncorrectable %d, errors:\n%v", rep.Summary(), rep.Corrected, rep.Uncorrectable, rep.Errors)
	}
	var dataErr, metaErr string
	for _, e := range rep.Errors {
		if e.Metadata {
			metaErr = e.String()
			if e.Physical != meta[0] || e.Tree != ondisk.FSTreeObjectID || e.Mirror != 1 {
				t.Errorf("metadata error at physical %d tree %d copy %d, want %d, FS_TREE, copy 1", e.Physical, e.Tree, e.Mirror, meta[0])
			}
		} else {
			dataErr = e.String()
			if len(e.Files) != 1 || e.Files[0].Path != "/dir/victim" || e.Files[0].Offset != 0 {
				t.Errorf("data error names files %+v, want /dir/victim at offset 0", e.Files)
			}
		}
	}
	if !strings.Contains(dataErr, "/dir/victim") || !strings.Contains(dataErr, "repairable") || !strings.Contains(metaErr, "FS_TREE") {
		t.Errorf("reports:\n%s\n%s", dataErr, metaErr)
	}
	if after, _ := os.ReadFile(img); !bytes.Equal(after, mutated(raw, first+100, int(meta[0])+300)) {
		t.Error("scrub without --repair changed the image")
	}

	rep = runScrub(t, img, true)
	if rep.CsumErrors != 1 || rep.VerifyErrors != 4 || rep.Corrected != 5 || !rep.OK() {
		t.Fatalf("repair: %s, corrected %d, uncorrectable %d: %v", rep.Summary(), rep.Corrected, rep.Uncorrectable, rep.Errors)
	}
	if rep = runScrub(t, img, false); rep.NumErrors != 0 {
		t.Fatalf("after repair: %s: %v", rep.Summary(), rep.Errors)
	}
	testutil.CheckImage(t, img)
	testutil.CheckImage(t, img, "--check-data-csum")
}

// mutated is raw with the bytes at offs flipped as flipAt does.
func mutated(raw []byte, offs ...int) []byte {
	out := append([]byte(nil), raw...)
	for _, o := range offs {
		out[o] ^= 0x5a
	}
	return out
}

func TestScrubUncorrectableSingle(t *testing.T) {
	testutil.NeedProgs(t)
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "only"), pattern(), 0o644)
	img := filepath.Join(t.TempDir(), "single.img")
	testutil.MkfsRootdir(t, src, img, 256<<20, "-m", "dup", "-d", "single")
	raw, _ := os.ReadFile(img)
	off := bytes.Index(raw, pattern()[:4096])
	if off < 0 {
		t.Fatal("file data not found in the image")
	}
	flipAt(t, img, int64(off)+4096+7) // second sector
	rep := runScrub(t, img, true)
	if rep.CsumErrors != 1 || rep.Uncorrectable != 1 || rep.Corrected != 0 || rep.OK() {
		t.Fatalf("single data: %s, corrected %d, uncorrectable %d: %v", rep.Summary(), rep.Corrected, rep.Uncorrectable, rep.Errors)
	}
	e := rep.Errors[0]
	if len(e.Files) != 1 || e.Files[0].Path != "/only" || e.Files[0].Offset != 4096 || !strings.Contains(e.String(), "uncorrectable") {
		t.Errorf("error %s", e.String())
	}
}
