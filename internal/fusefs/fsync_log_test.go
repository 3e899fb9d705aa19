package fusefs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// readSuperOf reads the primary superblock of img.
func readSuperOf(t *testing.T, img string) *ondisk.Superblock {
	t.Helper()
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

// TestFsyncThroughLogTree: fsync(2) of a committed file on the mount, while
// 64 MiB of another file are buffered, writes that file's log tree and no
// commit: the image copied right after the fsync has a log root and the
// generation of before; btrfs check accepts it and the kernel (as root)
// replays the fsync'd content; the other file's buffered data was not
// written.
func TestFsyncThroughLogTree(t *testing.T) {
	img := newImage(t, 1<<30)
	tm := mountImage(t, img, Options{})
	a := tm.path("a")
	if err := os.WriteFile(a, []byte("committed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tm.Sync(); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(tm.path("big"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{7}, 1<<20)
	for i := 0; i < 64; i++ {
		if _, err := big.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	defer big.Close()
	// Space for the buffered bytes is reserved as they are written, and
	// the reservation adds a data chunk, as kernel btrfs's does
	// (btrfs_reserve_data_bytes, ALLOC_CHUNK_FORCE); the first fsync in a
	// transaction that made a block group commits, as the kernel's does
	// (btrfs_make_block_group sets the log full commit). That fsync is
	// this one, of another file: the next one is what is measured.
	must(t, os.WriteFile(tm.path("warm"), []byte("w"), 0o644))
	if w, err := os.OpenFile(tm.path("warm"), os.O_WRONLY, 0); err == nil {
		must(t, w.Sync())
		w.Close()
	}
	gen := readSuperOf(t, img).Generation
	written := tm.CacheStats().WrittenBytes
	f, err := os.OpenFile(a, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := []byte("FSYNC'D, 100 bytes ......................................................................... end\n")
	if _, err := f.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	st := tm.m.rw.ops.FsyncStats()
	crash := filepath.Join(t.TempDir(), "crash.img")
	if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	sb := readSuperOf(t, crash)
	if st.Logged != 1 || sb.LogRoot == 0 || sb.Generation != gen {
		t.Fatalf("fsync: stats %+v, super generation %d (before %d) log_root %d: want the log, no commit", st, sb.Generation, gen, sb.LogRoot)
	}
	if w := tm.CacheStats().WrittenBytes - written; w > uint64(len(want)) {
		t.Errorf("fsync wrote back %d bytes, want only the fsync'd file's %d", w, len(want))
	}
	checktest.Image(t, crash)
	if canKernelMount() {
		dir := testutil.LoopMount(t, crash, "")
		got, err := os.ReadFile(filepath.Join(dir, "a"))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("kernel replay: a = %q, %v; want %q", got, err, want)
		}
		if fi, err := os.Stat(filepath.Join(dir, "big")); err == nil && fi.Size() != 0 {
			t.Errorf("kernel replay: big has %d bytes; its buffered data was never fsync'd", fi.Size())
		}
		testutil.Unmount(t, dir)
		checktest.Image(t, crash)
	}
}
