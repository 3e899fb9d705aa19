package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/testutil/fuzzimg"
)

// Whole-image fuzz targets for the read-side commands: each input is a
// mutation script (fuzzimg.Script) applied to our own image of every inode
// kind, written to a file that the command reads as a user's image. Every
// input runs under testutil.DefaultFuzzBounds (10 s, 256 MiB): a command
// that loops or grows without bound on a hostile image is found as a
// crash. Seeds that fail today are left out until fixed (the KnownBad
// maps); see /work/notes/fuzz-findings/README.md.

// fuzzCmdImage returns the base image and a per-process file to write each
// damaged image to.
func fuzzCmdImage(f *testing.F) (*fuzzimg.Image, string) {
	img, err := fuzzimg.Base()
	if err != nil {
		f.Fatal(err)
	}
	return img, filepath.Join(fuzzimg.TempDir(f), "fuzz.img")
}

func fuzzSeeds(f *testing.F, img *fuzzimg.Image, knownBad map[string]bool) {
	for _, s := range img.CoreSeeds() {
		if !knownBad[s.Name] {
			f.Add(s.Script)
		}
	}
}

// FuzzRestoreImage restores each damaged image into a directory inside a
// sandbox that also holds a victim file: restore may fail, but must end in
// bounds, never panic, and never create or change anything outside its
// destination.
func FuzzRestoreImage(f *testing.F) {
	img, path := fuzzCmdImage(f)
	fuzzSeeds(f, img, fuzzRestoreKnownBad)
	f.Fuzz(func(t *testing.T, script []byte) {
		if err := img.Apply(script).WriteFile(path); err != nil {
			t.Fatal(err)
		}
		box := fuzzimg.TempDir(t)
		victim := filepath.Join(box, "victim")
		if err := os.WriteFile(victim, []byte("outside DESTDIR\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(box, "dest")
		args := []string{"-q", path, dest}
		if fuzzimg.NoVerify(script) {
			args = append([]string{"--no-verify"}, args...)
		}
		testutil.FuzzBound(t, script, func() {
			restoreMain(args, io.Discard)
		})
		ents, err := os.ReadDir(box)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != "victim" && e.Name() != "dest" {
				t.Errorf("restore created %s outside its destination", filepath.Join(box, e.Name()))
			}
		}
		if b, err := os.ReadFile(victim); err != nil || !bytes.Equal(b, []byte("outside DESTDIR\n")) {
			t.Errorf("restore changed a file outside its destination: %q %v", b, err)
		}
	})
}

// fuzzRestoreKnownBad, fuzzCheckKnownBad: seeds that fail today (see
// /work/notes/fuzz-findings/README.md); none.
var fuzzRestoreKnownBad = map[string]bool{}

// FuzzLsImage lists each damaged image recursively with everything shown
// (ls -R -l -i), from the top level and from each of the first subvolumes.
func FuzzLsImage(f *testing.F) {
	img, path := fuzzCmdImage(f)
	fuzzSeeds(f, img, fuzzLsKnownBad)
	f.Fuzz(func(t *testing.T, script []byte) {
		if err := img.Apply(script).WriteFile(path); err != nil {
			t.Fatal(err)
		}
		args := []string{"-R", "-l", "-i", path}
		if fuzzimg.NoVerify(script) {
			args = append([]string{"--no-verify"}, args...)
		}
		testutil.FuzzBound(t, script, func() {
			lsMain(args, io.Discard, io.Discard)
			lsMain([]string{"-R", "--subvol", "5", path}, io.Discard, io.Discard)
			lsMain([]string{"-R", "--subvol", "256", path}, io.Discard, io.Discard)
		})
	})
}

// fuzzLsKnownBad: see fuzzWalkKnownBad in the root package; ls -R prints
// the tree 40 times over (~3 s here, 8,000 lines for 200 entries).
var fuzzLsKnownBad = map[string]bool{"dup-over-symlink-escx": true}

// FuzzCheckImage runs `gobtrfs check` on each damaged image (with
// --check-data-csum when the script's flag asks): it may report anything,
// but must end in bounds and never panic.
func FuzzCheckImage(f *testing.F) {
	img, path := fuzzCmdImage(f)
	fuzzSeeds(f, img, fuzzCheckKnownBad)
	f.Fuzz(func(t *testing.T, script []byte) {
		if err := img.Apply(script).WriteFile(path); err != nil {
			t.Fatal(err)
		}
		args := []string{"-q", path}
		if fuzzimg.NoVerify(script) {
			args = append([]string{"--check-data-csum"}, args...)
		}
		testutil.FuzzBound(t, script, func() {
			checkMain(args, io.Discard, io.Discard)
		})
	})
}

var fuzzCheckKnownBad = map[string]bool{}
