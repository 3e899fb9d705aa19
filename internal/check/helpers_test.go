package check

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// needProgs skips unless mkfs.btrfs and btrfs (the oracle) are installed.
func needProgs(t testing.TB) {
	t.Helper()
	for _, c := range []string{"mkfs.btrfs", "btrfs"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed (btrfs-progs); run scripts/deps.sh as root", c)
		}
	}
}

// progsCheck runs btrfs check --readonly (plus extra arguments) and
// reports whether it found the image clean (testutil.ProgsCheck: the one
// set of rules for its output), with its output.
func progsCheck(t testing.TB, img string, extra ...string) (bool, string) {
	t.Helper()
	r, ran := testutil.ProgsCheck(img, extra...)
	if !ran {
		t.Skip(testutil.ProgsMissing + ": the oracle is needed here")
	}
	if !r.Clean() {
		return false, r.String()
	}
	return true, r.Output
}

// ourCheck runs the checker and fails the test if it cannot open the image.
func ourCheck(t testing.TB, img string, o Options) *Report {
	t.Helper()
	rep, err := ImageWith(img, o)
	if err != nil {
		t.Fatalf("check %s: %v", img, err)
	}
	return rep
}

// mustBeClean asserts that both checkers find img clean.
func mustBeClean(t testing.TB, img string, o Options) *Report {
	t.Helper()
	rep := ourCheck(t, img, o)
	if !rep.OK() {
		t.Errorf("our check of %s:\n%s", img, rep)
	}
	var extra []string
	if o.CheckDataCsum {
		extra = append(extra, "--check-data-csum")
	}
	if !testutil.HaveProgs() {
		t.Log(testutil.ProgsMissing)
	} else if ok, out := progsCheck(t, img, extra...); !ok {
		t.Errorf("btrfs check --readonly %s:\n%s", img, out)
	}
	return rep
}

// newImage makes a sparse file of size bytes.
func newImage(t testing.TB, path string, size int64) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// mkfsImage runs mkfs.btrfs with --rootdir src (if not empty) and args.
func mkfsImage(t testing.TB, img, src string, size int64, args ...string) {
	t.Helper()
	newImage(t, img, size)
	argv := []string{"-q", "-f"}
	if src != "" {
		argv = append(argv, "--rootdir", src)
	}
	argv = append(append(argv, args...), img)
	if out, err := exec.Command("mkfs.btrfs", argv...).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.btrfs %s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// copyImage copies a (sparse) image file.
func copyImage(t testing.TB, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "--sparse=always", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v\n%s", from, to, err, out)
	}
}

// sourceTree is a directory of files for mkfs --rootdir, built once per
// test binary: every kind of inode, hard links, xattrs, and enough files
// to give the subvolume tree more than one level.
var sourceTree struct {
	once sync.Once
	dir  string
	err  error
}

func source(t testing.TB) string {
	t.Helper()
	sourceTree.once.Do(func() {
		dir, err := os.MkdirTemp("", "check-src-")
		if err != nil {
			sourceTree.err = err
			return
		}
		sourceTree.dir = filepath.Join(dir, "src")
		testimg.BuildSource(t, sourceTree.dir, testimg.SourceOptions{Seed: 1, ManyFiles: 800})
	})
	if sourceTree.err != nil {
		t.Fatal(sourceTree.err)
	}
	return sourceTree.dir
}

// baseImage is a mkfs.btrfs --rootdir image of source(), made once; tests
// copy it before damaging it.
var baseImage struct {
	once sync.Once
	path string
}

func base(t testing.TB) string {
	t.Helper()
	needProgs(t)
	src := source(t)
	baseImage.once.Do(func() {
		dir, err := os.MkdirTemp("", "check-base-")
		if err != nil {
			t.Fatal(err)
		}
		baseImage.path = filepath.Join(dir, "base.img")
		mkfsImage(t, baseImage.path, src, 256<<20)
	})
	if baseImage.path == "" {
		t.Fatal("base image was not built")
	}
	return baseImage.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if sourceTree.dir != "" {
		os.RemoveAll(filepath.Dir(sourceTree.dir))
	}
	if baseImage.path != "" {
		os.RemoveAll(filepath.Dir(baseImage.path))
	}
	if benchImage.path != "" {
		os.RemoveAll(filepath.Dir(benchImage.path))
	}
	os.Exit(code)
}

func describe(rep *Report) string { return fmt.Sprintf("%d problems:\n%s", rep.NumProblems, rep) }
