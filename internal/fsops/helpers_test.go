package fsops

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// imageOpts are the mkfs.btrfs settings of a test image.
type imageOpts struct {
	nodesize string // "" = default 16k
	csum     string // "" = crc32c
	features string // -O list, e.g. "^no-holes"
	size     int64  // bytes, default 256 MiB
}

func (o imageOpts) String() string {
	s := "nodesize=" + o.nodesize + ",csum=" + o.csum + ",features=" + o.features
	return strings.ReplaceAll(s, "=,", "=default,")
}

func needMkfs(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"mkfs.btrfs", "btrfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (btrfs-progs): run scripts/deps.sh as root", tool)
		}
	}
}

// newImage makes an empty filesystem image with mkfs.btrfs.
func newImage(t testing.TB, o imageOpts) string {
	t.Helper()
	needMkfs(t)
	img := filepath.Join(t.TempDir(), "img")
	size := o.size
	if size == 0 {
		size = 256 << 20
	}
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	args := []string{"-q", "-f"}
	if o.nodesize != "" {
		args = append(args, "--nodesize", o.nodesize)
	}
	if o.csum != "" {
		args = append(args, "--csum", o.csum)
	}
	if o.features != "" {
		args = append(args, "-O", o.features)
	}
	args = append(args, img)
	if out, err := exec.Command("mkfs.btrfs", args...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return img
}

// openImage opens img for changes; the test closes it.
func openImage(t testing.TB, img string, opts Options) *FS {
	t.Helper()
	f, err := OpenImage(img, opts)
	if err != nil {
		t.Fatalf("open %s: %v", img, err)
	}
	return f
}

// checkErrorWords are the words of btrfs check lines that report problems.
var checkErrorWords = regexp.MustCompile(`\b(ERROR|[Ee]rrors?|mismatch\w*|wanted|missing|bad|wrong)\b`)

// btrfsCheck runs btrfs check --readonly (data checksums included) and
// fails on any problem line or a non-zero exit.
func btrfsCheck(t testing.TB, img string) {
	t.Helper()
	out, err := exec.Command("btrfs", "check", "--readonly", "--check-data-csum", img).CombinedOutput()
	var bad []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "no error found") {
			continue
		}
		if checkErrorWords.MatchString(l) {
			bad = append(bad, l)
		}
	}
	if err != nil || len(bad) > 0 {
		t.Fatalf("btrfs check --readonly %s: %v\nproblem lines:\n%s\nfull output:\n%s", img, err,
			strings.Join(bad, "\n"), out)
	}
}

// dumpTree returns btrfs inspect-internal dump-tree output for a tree.
func dumpTree(t testing.TB, img, tree string) string {
	t.Helper()
	out, err := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", tree, img).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-tree %s: %v\n%s", tree, err, out)
	}
	return string(out)
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
