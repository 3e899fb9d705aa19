package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var rdSeedFlag = flag.Int64("seed", 0, "random seed (0: time-based)")

func rdTestSeed(t testing.TB) int64 { return testutil.Seed(t, *rdSeedFlag) }

func rdRunRestore(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stderr bytes.Buffer
	err := restoreMain(args, &stderr)
	return stderr.String(), err
}

// TestRestoreMkfsMatrix restores mkfs.btrfs --rootdir images made with every
// checksum type, both node sizes and both metadata profiles, and compares
// the result with the source tree: content, mode, owner, mtime, xattrs, link
// structure, symlinks, fifos and devices. btrfs-progs 6.2 drops timestamp
// nanoseconds and device numbers in --rootdir; ProbeMkfs detects that with
// dump-tree and the comparison then checks seconds only and skips rdev.
func TestRestoreMkfsMatrix(t *testing.T) {
	testutil.NeedProgs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, n := range testimg.BuildSource(t, src, testimg.SourceOptions{Seed: rdTestSeed(t), ManyFiles: 400}) {
		t.Log(n)
	}
	q := testimg.ProbeMkfs(t)
	t.Logf("mkfs quirks: %+v", q)
	for _, cs := range []string{"crc32c", "xxhash", "sha256", "blake2"} {
		for _, ns := range []string{"4096", "65536"} {
			for _, prof := range []string{"dup", "single"} {
				name := fmt.Sprintf("%s-n%s-m%s", cs, ns, prof)
				t.Run(name, func(t *testing.T) {
					img := filepath.Join(t.TempDir(), "img")
					testutil.MkfsRootdir(t, src, img, 256<<20, "--csum", cs, "-n", ns, "-m", prof)
					dest := filepath.Join(t.TempDir(), "out")
					out, err := rdRunRestore(t, "-q", "--devices", "--keep-setuid", img, dest)
					if err != nil {
						t.Fatalf("restore: %v\n%s", err, out)
					}
					diffs := testimg.Compare(src, dest, testimg.CompareOptions{
						MtimeSecondsOnly: q.DropsNsec, SkipRdev: q.DropsRdev, SkipRootMeta: true})
					if len(diffs) > 0 {
						t.Fatalf("restored tree differs from the source:\n%s", strings.Join(diffs, "\n"))
					}
				})
			}
		}
	}
}

// TestRestoreCorrupt damages one file's data and restores: the command
// fails, names the file, inode, offset and logical address, keeps the
// readable parts, and restores everything else exactly.
func TestRestoreCorrupt(t *testing.T) {
	testutil.NeedProgs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	testimg.BuildSource(t, src, testimg.SourceOptions{Seed: rdTestSeed(t), ManyFiles: 10})
	q := testimg.ProbeMkfs(t)
	img := filepath.Join(dir, "img")
	testutil.MkfsRootdir(t, src, img, 256<<20, "-m", "single")
	// find the 1 MiB file's bytes in the image by content and damage them
	want, _ := os.ReadFile(filepath.Join(src, "files/size-1048576"))
	raw, _ := os.ReadFile(img)
	at := bytes.Index(raw, want[:65536])
	if at < 0 {
		t.Fatal("file data not found in image")
	}
	raw[at+5000] ^= 0xff
	os.WriteFile(img, raw, 0o644)

	dest := filepath.Join(dir, "out")
	out, err := rdRunRestore(t, "-q", "--devices", "--keep-setuid", img, dest)
	t.Logf("restore: %v\n%s", err, out)
	if err == nil {
		t.Fatal("restore of a damaged image succeeded")
	}
	for _, s := range []string{"size-1048576", "file offset 4096", "logical", "checksum mismatch"} {
		if !strings.Contains(out, s) {
			t.Errorf("summary does not mention %q", s)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dest, "files/size-1048576"))
	if len(got) != len(want) || !bytes.Equal(got[:4096], want[:4096]) || !bytes.Equal(got[8192:], want[8192:]) {
		t.Error("the readable parts of the damaged file were not restored")
	}
	// everything but the damaged file (and its hard link) matches
	os.Remove(filepath.Join(dest, "files/size-1048576"))
	os.Remove(filepath.Join(dest, "names/hard-1m"))
	os.Remove(filepath.Join(src, "files/size-1048576"))
	os.Remove(filepath.Join(src, "names/hard-1m"))
	diffs := testimg.Compare(src, dest, testimg.CompareOptions{MtimeSecondsOnly: q.DropsNsec, SkipRdev: q.DropsRdev,
		SkipRootMeta: true, SkipTimes: func(rel string, _ *rdUnixStat) bool { return rel == "files" || rel == "names" }})
	if len(diffs) > 0 {
		t.Fatalf("rest of the tree differs:\n%s", strings.Join(diffs, "\n"))
	}
}
