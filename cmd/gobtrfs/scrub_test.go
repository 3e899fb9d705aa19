package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestScrubCLI damages one copy of a tree block and one copy of a file's
// data in a DUP image: gobtrfs scrub names the file and fails, the kernel's
// scrub of a mount counts the same errors, gobtrfs scrub --repair fixes
// both copies and btrfs check (also --check-data-csum) is then clean.
func TestScrubCLI(t *testing.T) {
	testutil.NeedProgs(t)
	src := t.TempDir()
	data := bytes.Repeat([]byte("scrub-cli-victim-0123456789"), 8192)
	os.MkdirAll(filepath.Join(src, "d"), 0o755)
	os.WriteFile(filepath.Join(src, "d", "victim"), data, 0o644)
	img := filepath.Join(t.TempDir(), "s.img")
	testutil.MkfsRootdir(t, src, img, 256<<20, "-m", "dup", "-d", "dup")

	raw, _ := os.ReadFile(img)
	at := bytes.Index(raw, data[:4096])
	if at < 0 || !bytes.Contains(raw[at+1:], data[:4096]) {
		t.Fatal("the file's data is not stored twice (DUP)")
	}
	flipByte(t, img, int64(at)+11)
	flipByte(t, img, int64(fsRootCopy(t, img))+500)

	out, errs, rc := clitoolsRun("scrub", img)
	if rc != 1 || !strings.Contains(errs, "file /d/victim (subvol 5, inode ") ||
		!strings.Contains(errs, "metadata csum error") || !strings.Contains(out, "Error summary:    verify=4 csum=1") ||
		strings.Contains(errs, "using copy") {
		t.Fatalf("scrub of the damaged image: exit %d\nstdout:\n%s\nstderr:\n%s", rc, out, errs)
	}
	if testutil.HaveRootLoop() {
		mnt := testutil.LoopMount(t, img, "ro")
		kout, _ := exec.Command("btrfs", "scrub", "start", "-B", "-r", "-R", mnt).CombinedOutput()
		testutil.Unmount(t, mnt)
		ours, _, _ := clitoolsRun("scrub", "-q", "-R", img)
		for _, counter := range []string{"csum_errors", "verify_errors", "data_bytes_scrubbed", "tree_bytes_scrubbed", "tree_extents_scrubbed", "uncorrectable_errors"} {
			re := regexp.MustCompile(`\t` + counter + `: (\d+)\n`)
			k, o := re.FindStringSubmatch(string(kout)), re.FindStringSubmatch(ours)
			if k == nil || o == nil || k[1] != o[1] {
				t.Errorf("%s: kernel scrub %v, gobtrfs %v\nkernel:\n%s", counter, k, o, kout)
			}
		}
	}

	out, errs, rc = clitoolsRun("scrub", "--repair", img)
	if rc != 0 || !strings.Contains(out, "Corrected:      5") || !strings.Contains(out, "Uncorrectable:  0") {
		t.Fatalf("scrub --repair: exit %d\nstdout:\n%s\nstderr:\n%s", rc, out, errs)
	}
	if out, errs, rc = clitoolsRun("scrub", img); rc != 0 || !strings.Contains(out, "no errors found") {
		t.Fatalf("scrub after repair: exit %d\n%s%s", rc, out, errs)
	}
	testutil.CheckImage(t, img)
	testutil.CheckImage(t, img, "--check-data-csum")
	if _, errs, rc := clitoolsRun("scrub", "--repair", "-r", img); rc != 2 {
		t.Errorf("--repair -r: exit %d, want a usage error: %s", rc, errs)
	}
}

func flipByte(t *testing.T, img string, off int64) {
	t.Helper()
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	f.ReadAt(b, off)
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// fsRootCopy is the physical offset of the first copy of the top-level
// subvolume's root block.
func fsRootCopy(t *testing.T, img string) ondisk.PhysicalAddr {
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
	if err != nil || len(copies) != 2 {
		t.Fatalf("fs tree root: %d copies, %v", len(copies), err)
	}
	return copies[0].Physical
}

// TestScrubQuotesNames: scrub names the files of a bad sector; a name
// holding escape sequences or a newline is printed quoted, as ls does.
func TestScrubQuotesNames(t *testing.T) {
	testutil.NeedProgs(t)
	src := t.TempDir()
	const evil = "evil\x1b]0;owned\x07\nfake line"
	data := bytes.Repeat([]byte("scrub-quote-victim-0123456789"), 512)
	os.WriteFile(filepath.Join(src, evil), data, 0o644)
	img := filepath.Join(t.TempDir(), "q.img")
	testutil.MkfsRootdir(t, src, img, 128<<20)
	raw, _ := os.ReadFile(img)
	at := bytes.Index(raw, data[:4096])
	if at < 0 {
		t.Fatal("the file's data is not in the image")
	}
	flipByte(t, img, int64(at)+11)
	rc, _, errs := runCLIProc(t, "scrub", img)
	if rc != 1 || !strings.Contains(errs, `file $'/evil\x1b]0;owned\x07\nfake line' (subvol 5`) ||
		strings.ContainsAny(errs, "\x1b\x07") || strings.Contains(errs, "\nfake line") {
		t.Fatalf("scrub: exit %d, stderr:\n%q", rc, errs)
	}
}
