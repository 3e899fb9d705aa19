package fsops

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// imageOpts are the mkfs.btrfs settings of a test image.
type imageOpts struct {
	nodesize string   // "" = default 16k
	csum     string   // "" = crc32c
	features string   // -O list, e.g. "^no-holes"
	size     int64    // bytes, default 256 MiB
	args     []string // more mkfs.btrfs arguments, e.g. "--mixed"
}

func (o imageOpts) String() string {
	s := "nodesize=" + o.nodesize + ",csum=" + o.csum + ",features=" + o.features
	s = strings.ReplaceAll(s, "=,", "=default,")
	if len(o.args) > 0 {
		s += "," + strings.Join(o.args, " ")
	}
	return s
}

// newImage makes an empty filesystem image with mkfs.btrfs; the test ends
// with checktest.Image of it.
func newImage(t testing.TB, o imageOpts) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	size := o.size
	if size == 0 {
		size = 256 << 20
	}
	var args []string
	if o.nodesize != "" {
		args = append(args, "--nodesize", o.nodesize)
	}
	if o.csum != "" {
		args = append(args, "--csum", o.csum)
	}
	if o.features != "" {
		args = append(args, "-O", o.features)
	}
	args = append(args, o.args...)
	checktest.Mkfs(t, img, size, args...)
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

// dumpTree returns btrfs inspect-internal dump-tree output for a tree.
func dumpTree(t testing.TB, img, tree string) string {
	t.Helper()
	return testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", tree, img)
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
