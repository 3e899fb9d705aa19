package gobtrfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestRWFsync: RW.Fsync of a committed file writes the log tree (super
// log_root set, generation unchanged) and the image read back through the
// library shows the fsync'd content; fsync of a directory commits, counted.
func TestRWFsync(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	if err := gobtrfs.CreateImage(img, 512<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Mkdir("d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("d/a", []byte("old content"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	super := func() *ondisk.Superblock {
		b := make([]byte, ondisk.SuperInfoSize)
		fd, err := os.Open(img)
		if err != nil {
			t.Fatal(err)
		}
		defer fd.Close()
		if _, err := fd.ReadAt(b, int64(ondisk.SuperMirrorOffsets[0])); err != nil {
			t.Fatal(err)
		}
		sb, err := ondisk.DecodeSuperblock(b)
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	gen := super().Generation
	if _, err := w.WriteAt("d/a", []byte("NEW"), 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Fsync("d/a"); err != nil {
		t.Fatal(err)
	}
	if sb := super(); sb.LogRoot == 0 || sb.Generation != gen {
		t.Fatalf("after Fsync: log_root %d generation %d (before %d): want a log, no commit", sb.LogRoot, sb.Generation, gen)
	}
	// d did not change in this transaction: nothing to log.
	if err := w.Fsync("d"); err != nil {
		t.Fatal(err)
	}
	st := w.FsyncStats()
	if st.Logged != 1 || st.Commits["clean"] != 1 {
		t.Fatalf("FsyncStats %+v: want 1 logged and 1 clean", st)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if sb := super(); sb.LogRoot != 0 || sb.Generation == gen {
		t.Fatalf("after the commit: log_root %d generation %d", sb.LogRoot, sb.Generation)
	}
	// Unchanged since that commit: neither a log nor a commit.
	if err := w.Fsync("d/a"); err != nil {
		t.Fatal(err)
	}
	if st := w.FsyncStats(); st.Commits["clean"] != 2 || st.Logged != 1 || super().Generation != gen+1 {
		t.Fatalf("fsync of an unchanged file: %+v, generation %d", st, super().Generation)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	checktest.Image(t, img)
}
