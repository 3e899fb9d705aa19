package testimg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// MkfsQuirks are what mkfs.btrfs --rootdir of this btrfs-progs version does
// not copy from the source tree (btrfs-progs 6.2 drops timestamp nanoseconds
// and device numbers, and stores sparse files fully allocated).
type MkfsQuirks struct {
	DropsNsec bool
	DropsRdev bool
}

// ProbeMkfs makes a tiny image and reads it back with dump-tree (an oracle
// independent of our reader) to learn the quirks.
func ProbeMkfs(t testing.TB) MkfsQuirks {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	p := filepath.Join(src, "f")
	os.WriteFile(p, []byte("x"), 0o644)
	os.Chtimes(p, timeNs(1000000000, 123456789), timeNs(1000000000, 123456789))
	img := filepath.Join(dir, "img")
	testutil.MkfsRootdir(t, src, img, 128<<20)
	out := testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", "fs", img)
	q := MkfsQuirks{DropsNsec: !strings.Contains(out, "mtime 1000000000.123456789")}
	if os.Geteuid() == 0 {
		q.DropsRdev = true // progs 6.2 writes rdev 0 for every inode
		if strings.Contains(out, "rdev ") && !strings.Contains(out, "rdev 0") {
			q.DropsRdev = false
		}
	}
	return q
}

// DumpTreeCount counts lines of `btrfs inspect-internal dump-tree -t TREE img`
// containing substr.
func DumpTreeCount(t testing.TB, img, tree, substr string) int {
	t.Helper()
	return strings.Count(testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", tree, img), substr)
}

// MkfsSource builds a source tree (BuildSource, its notes logged) in a new
// directory and an image of it of size bytes with mkfs.btrfs --rootdir and
// extra arguments, checked with btrfs check. It skips without btrfs-progs.
func MkfsSource(t testing.TB, o SourceOptions, size int64, args ...string) (src, img string) {
	t.Helper()
	testutil.NeedProgs(t)
	dir := t.TempDir()
	src = filepath.Join(dir, "src")
	for _, n := range BuildSource(t, src, o) {
		t.Log(n)
	}
	img = filepath.Join(dir, "img")
	testutil.MkfsRootdir(t, src, img, size, args...)
	return src, img
}
