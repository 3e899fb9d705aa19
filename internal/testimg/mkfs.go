package testimg

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// NeedMkfs skips the test when mkfs.btrfs is missing.
func NeedMkfs(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("mkfs.btrfs"); err != nil {
		t.Skip("mkfs.btrfs not installed (btrfs-progs); run scripts/deps.sh as root")
	}
}

// Mkfs makes img (size bytes, sparse) from src with mkfs.btrfs --rootdir and
// extra arguments, then checks it with btrfs check --readonly.
func Mkfs(t testing.TB, src, img string, size int64, args ...string) {
	t.Helper()
	NeedMkfs(t)
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	argv := append([]string{"-q", "-f", "--rootdir", src}, args...)
	argv = append(argv, img)
	if out, err := exec.Command("mkfs.btrfs", argv...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	Check(t, img)
}

// checkErrorLine matches the lines btrfs check prints for problems.
var checkErrorLine = regexp.MustCompile(`(?i)\b(error|errors found|corrupt|mismatch|invalid|bad |wrong|missing|failed)`)

// Check runs btrfs check --readonly on img and fails on error lines or a
// non-zero exit.
func Check(t testing.TB, img string) {
	t.Helper()
	if _, err := exec.LookPath("btrfs"); err != nil {
		t.Logf("btrfs not installed: skipping btrfs check of %s", img)
		return
	}
	out, err := exec.Command("btrfs", "check", "--readonly", img).CombinedOutput()
	var bad []string
	for _, l := range strings.Split(string(out), "\n") {
		if checkErrorLine.MatchString(l) && !strings.Contains(l, "found 0 errors") &&
			!strings.Contains(l, "no error found") {
			bad = append(bad, l)
		}
	}
	if err != nil || len(bad) > 0 {
		t.Fatalf("btrfs check --readonly %s: %v\n%s", img, err, out)
	}
}

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
	NeedMkfs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	p := filepath.Join(src, "f")
	os.WriteFile(p, []byte("x"), 0o644)
	os.Chtimes(p, timeNs(1000000000, 123456789), timeNs(1000000000, 123456789))
	img := filepath.Join(dir, "img")
	Mkfs(t, src, img, 128<<20)
	out, err := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "fs", img).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-tree: %v\n%s", err, out)
	}
	q := MkfsQuirks{DropsNsec: !bytes.Contains(out, []byte("mtime 1000000000.123456789"))}
	if os.Geteuid() == 0 {
		q.DropsRdev = true // progs 6.2 writes rdev 0 for every inode
		if bytes.Contains(out, []byte("rdev ")) && !bytes.Contains(out, []byte("rdev 0")) {
			q.DropsRdev = false
		}
	}
	return q
}

// DumpTreeCount counts lines of `btrfs inspect-internal dump-tree -t TREE img`
// containing substr.
func DumpTreeCount(t testing.TB, img, tree, substr string) int {
	t.Helper()
	out, err := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", tree, img).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-tree: %v\n%s", err, out)
	}
	return strings.Count(string(out), substr)
}
