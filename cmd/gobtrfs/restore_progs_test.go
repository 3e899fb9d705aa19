package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestRestoreLikeProgs runs gobtrfs restore and btrfs restore with the
// same options on one image and compares what they make: -l, -x -m -S -s
// (every subvolume and snapshot, metadata, xattrs, symlinks), -r ID, and
// an existing file in DESTDIR, kept without -o and replaced with it.
func TestRestoreLikeProgs(t *testing.T) {
	testutil.NeedProgs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "etc"), 0o750)
	os.WriteFile(filepath.Join(src, "etc", "conf"), []byte("key=value\n"), 0o640)
	os.WriteFile(filepath.Join(src, "keep"), []byte("from the image\n"), 0o644)
	os.Symlink("etc/conf", filepath.Join(src, "link"))
	if err := exec.Command("setfattr", "-n", "user.tag", "-v", "t1", filepath.Join(src, "keep")).Run(); err != nil {
		t.Logf("setfattr: %v (no xattr in the image)", err)
	}
	img := filepath.Join(dir, "r.img")
	testutil.MkfsRootdir(t, src, img, 200<<20)
	for _, a := range [][]string{
		{"subvolume", "create", img, "/sv"},
		{"put", img, filepath.Join(src, "etc"), "/sv/"},
		{"subvolume", "snapshot", img, "/sv", "/snap"},
	} {
		if _, errs, rc := clitoolsRun(a...); rc != 0 {
			t.Fatalf("gobtrfs %s: exit %d: %s", strings.Join(a, " "), rc, errs)
		}
	}
	progs := func(args ...string) string {
		os.MkdirAll(args[len(args)-1], 0o755) // btrfs restore wants DESTDIR to exist
		out, err := exec.Command("btrfs", append([]string{"restore"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("btrfs restore %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	ours := func(args ...string) (string, string) {
		out, errs, rc := clitoolsRun(append([]string{"restore", "-q"}, args...)...)
		if rc != 0 {
			t.Fatalf("gobtrfs restore %s: exit %d: %s", strings.Join(args, " "), rc, errs)
		}
		return out, errs
	}
	cmp := func(name, a, b string) {
		t.Helper()
		if d := testimg.Compare(a, b, testimg.CompareOptions{SkipRootMeta: true}); len(d) > 0 {
			t.Errorf("%s: gobtrfs restore and btrfs restore differ:\n%s", name, strings.Join(d, "\n"))
		}
	}

	if got, want := func() string { o, _ := ours("-l", img); return o }(), progs("-l", img); got != want {
		t.Errorf("restore -l:\n gobtrfs:\n%s btrfs-progs:\n%s", got, want)
	}
	p, g := filepath.Join(dir, "p-all"), filepath.Join(dir, "g-all")
	progs("-x", "-m", "-S", "-s", img, p)
	_, summary := ours("-x", "-m", "-S", "-s", img, g)
	cmp("-x -m -S -s", p, g)
	if !strings.Contains(summary, "gobtrfs restore: restored ") || !strings.Contains(summary, "; 0 errors") {
		t.Errorf("no summary line:\n%s", summary)
	}
	p, g = filepath.Join(dir, "p-root"), filepath.Join(dir, "g-root")
	progs("-x", "-m", "-S", "-r", "256", img, p)
	ours("-x", "-m", "-S", "-r", "256", img, g)
	cmp("-r 256", p, g)

	for _, over := range []bool{false, true} {
		p, g := filepath.Join(dir, "p-exist"), filepath.Join(dir, "g-exist")
		for _, d := range []string{p, g} {
			os.RemoveAll(d)
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "keep"), []byte("already here\n"), 0o600)
		}
		args := []string{"-x", "-m", "-S", "-s"}
		if over {
			args = append(args, "-o")
		}
		progs(append(args, img, p)...)
		_, errs := ours(append(args, img, g)...)
		pb, _ := os.ReadFile(filepath.Join(p, "keep"))
		gb, _ := os.ReadFile(filepath.Join(g, "keep"))
		if string(pb) != string(gb) {
			t.Errorf("-o %v: an existing file holds %q after btrfs restore, %q after gobtrfs restore", over, pb, gb)
		}
		if !over && !strings.Contains(errs, "1 existing entries kept (-o overwrites)") {
			t.Errorf("summary does not count the existing file kept:\n%s", errs)
		}
	}
	if _, errs, rc := clitoolsRun("restore", "-r", "x", img, dir); rc != 2 || !strings.Contains(errs, "tree root ID is a number") {
		t.Errorf("-r x: exit %d: %s", rc, errs)
	}
}
