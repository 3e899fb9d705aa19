package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/testutil/fuzzimg"
)

// FuzzRestoreOverwrite restores each damaged image with -o into a
// destination where every top-level name of the clean image already
// exists as a symlink out of the destination, and one as a hard link to
// the victim: -o replaces them, and nothing outside the destination may be
// created or changed.
func FuzzRestoreOverwrite(f *testing.F) {
	img, path := fuzzCmdImage(f)
	clean, err := gobtrfs.OpenReaderAt(bytes.NewReader(img.Bytes), int64(len(img.Bytes)), nil)
	if err != nil {
		f.Fatal(err)
	}
	ents, err := clean.ReadDir(".")
	clean.Close()
	if err != nil {
		f.Fatal(err)
	}
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
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, e := range ents {
			p := filepath.Join(dest, e.Name())
			if i == 0 {
				err = os.Link(victim, p)
			} else {
				err = os.Symlink(box, p)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		testutil.FuzzBound(t, script, func() {
			restoreMain([]string{"-q", "-o", path, dest}, io.Discard)
		})
		names, err := os.ReadDir(box)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range names {
			if e.Name() != "victim" && e.Name() != "dest" {
				t.Errorf("restore -o created %s outside its destination", filepath.Join(box, e.Name()))
			}
		}
		if st, err := os.Stat(victim); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("restore -o changed the victim's mode: %v %v", st, err)
		}
		if b, err := os.ReadFile(victim); err != nil || !bytes.Equal(b, []byte("outside DESTDIR\n")) {
			t.Errorf("restore -o changed a file outside its destination: %q %v", b, err)
		}
	})
}
