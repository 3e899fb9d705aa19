package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cleanCheck = `Opening filesystem to check...
Checking filesystem on /tmp/TestBad_missing_wrong/001/img
UUID: 0bad0bad-ba0d-4bad-abad-00000000bad0
[1/7] checking root items
[5/7] checking csums against data
[6/7] checking root refs done with fs roots in lowmem mode, skipping
[7/7] checking quota groups skipped (not enabled on this FS)
found 147456 bytes used, no error found
total csum bytes: 0
`

func TestProblemLines(t *testing.T) {
	if bad := ProblemLines(cleanCheck, "/tmp/TestBad_missing_wrong/001/img"); len(bad) > 0 {
		t.Errorf("clean output has problem lines: %q", bad)
	}
	for _, l := range []string{
		"ERROR: errors found in extent allocation tree or chunk allocation",
		"ref mismatch on [22020096 16384] extent item 1, found 0",
		"incorrect global backref count on 22020096 found 1 wanted 0",
		"backpointer mismatch on [22036480 16384]",
		"owner ref check failed [22020096 16384]",
		"found 163840 bytes used, error(s) found",
		"root 5 inode 257 errors 2001, no inode item, link count wrong",
		"bad key ordering 39 40",
		"Errors found in fs roots",
		"csum missing for range",
		"unresolved ref dir 256 index 2 namelen 1 name a filetype 1 errors 3",
		"tree backref 30408704 root 5 not found in extent tree",
		"Incorrect local backref count on 13631488 root 5 owner 257 offset 0 found 1 wanted 0",
		"Counts for qgroup id: 0/5 are different",
		"mirror 1 bytenr 13631488 csum 0x8941f998 expected csum 0x00000000, csum failed",
		"could not find extent items for root 257",
	} {
		if bad := ProblemLines(cleanCheck+l+"\n", ""); len(bad) != 1 || bad[0] != l {
			t.Errorf("%q: problem lines %q", l, bad)
		}
	}
}

func TestMkfsCheckAndMount(t *testing.T) {
	NeedProgs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "d", "f"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "img")
	MkfsRootdir(t, src, img, 128<<20)
	if out := CheckImage(t, img, "--check-data-csum"); !strings.Contains(out, "checking csums against data") {
		t.Errorf("extra arguments not passed:\n%s", out)
	}

	NeedRootLoop(t)
	mnt := LoopMount(t, img, "ro")
	if b, err := os.ReadFile(filepath.Join(mnt, "d", "f")); err != nil || string(b) != "hello" {
		t.Fatalf("read through the kernel: %q %v", b, err)
	}
	Unmount(t, mnt)
	if isMounted(mnt) {
		t.Fatal("still mounted after Unmount")
	}
	if out := Run(t, "losetup", "-j", img); strings.TrimSpace(out) != "" {
		t.Fatalf("loop device left after Unmount: %s", out)
	}
	dev := Loop(t, img)
	a, b := Mount(t, dev, "ro"), Mount(t, dev, "ro,subvolid=5")
	if !isMounted(a) || !isMounted(b) {
		t.Fatal("Mount did not mount")
	}
	// the cleanups unmount both and detach dev
}

func TestDiffMaps(t *testing.T) {
	want := map[string]string{"a": "1", "b": "2", "c": "3"}
	got := map[string]string{"a": "1", "b": "two", "d": "4"}
	d := DiffMaps(want, got)
	if len(d) != 3 || !strings.HasPrefix(d[0], "b:") || !strings.HasPrefix(d[1], "c:") || d[2] != `d: unexpected "4"` {
		t.Fatalf("DiffMaps: %q", d)
	}
	if d := DiffMaps(want, want); len(d) != 0 {
		t.Fatalf("equal maps differ: %q", d)
	}
}
