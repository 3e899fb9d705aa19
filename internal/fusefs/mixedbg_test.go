package fusefs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// Filling images with mixed block groups (mkfs.btrfs --mixed: data and
// metadata share DATA|METADATA groups) through the FUSE mount.

// newMixedBGImage makes an empty mixed image of size bytes with
// mkfs.btrfs and extra arguments; the test ends with checktest.Image.
func newMixedBGImage(t *testing.T, size int64, args ...string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "mixed.img")
	checktest.Mkfs(t, img, size, append([]string{"--mixed"}, args...)...)
	return img
}

// mixedBGAvail is statfs's f_bavail of dir in bytes.
func mixedBGAvail(t *testing.T, dir string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	must(t, unix.Statfs(dir, &st))
	return st.Bavail * uint64(st.Bsize)
}

// mixedBGWriteFile writes data to path in 1 MiB write(2)s and fsyncs it;
// it returns the first error (of open, a write, fsync or close).
func mixedBGWriteFile(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	for off := 0; off < len(data) && err == nil; off += 1 << 20 {
		_, err = f.Write(data[off:min(off+1<<20, len(data))])
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestMixedBGFuseFill fills mixed images through the FUSE mount with files
// large and small (incompressible, and compressible on a compress=zstd
// mount) until write(2) or fsync fails with ENOSPC, and never with another
// error: metadata keeps its reserve, so no commit fails and the mount stays
// writable. Small (inline) files are then created until that fails too.
// The full mount shows what was written; deleting every file works on the
// full filesystem, statfs shows the space back, and it can be filled
// again to about as much. At the end the FUSE view equals what Linux
// mounts, and both checkers find the image clean.
func TestMixedBGFuseFill(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	layouts := []struct {
		name string
		size int64
		args []string
		opts Options
	}{
		{"128MiB,single", 128 << 20, nil, Options{}},
		{"128MiB,single,zstd", 128 << 20, nil, Options{Compress: "zstd"}},
		{"256MiB,dup", 256 << 20, []string{"-m", "dup", "-d", "dup"}, Options{}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel() // each on its own image and mount
			img := newMixedBGImage(t, l.size, l.args...)
			tm := mountImage(t, img, l.opts)
			r := rand.New(rand.NewSource(17))
			availEmpty := mixedBGAvail(t, tm.dir)
			first := mixedBGFill(t, tm, r, "a")
			availFull := mixedBGAvail(t, tm.dir)
			t.Logf("first fill: %d MiB in %d files; statfs avail %d KiB empty, %d KiB full",
				mixedBGTotal(first)>>20, len(first), availEmpty>>10, availFull>>10)
			if availFull > availEmpty/10 {
				t.Errorf("statfs of the full filesystem says %d KiB available (empty: %d KiB)", availFull>>10, availEmpty>>10)
			}
			mixedBGVerify(t, tm, first)

			// delete everything on the full filesystem
			names := make([]string, 0, len(first))
			for n := range first {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if err := os.Remove(tm.path(n)); err != nil {
					t.Fatalf("remove %s on a full mixed filesystem: %v", n, err)
				}
			}
			must(t, tm.Sync())
			availAfter := mixedBGAvail(t, tm.dir)
			t.Logf("after deleting everything: statfs avail %d KiB", availAfter>>10)
			if availAfter < availEmpty*9/10 {
				t.Errorf("statfs avail after deleting everything %d KiB, empty %d KiB", availAfter>>10, availEmpty>>10)
			}
			second := mixedBGFill(t, tm, r, "b")
			t.Logf("refill: %d MiB in %d files", mixedBGTotal(second)>>20, len(second))
			if mixedBGTotal(second) < mixedBGTotal(first)*9/10 {
				t.Errorf("refilled %d bytes, first fill %d", mixedBGTotal(second), mixedBGTotal(first))
			}
			mixedBGVerify(t, tm, second)
			if msgs := tm.logBuf.String(); msgs != "" {
				t.Logf("daemon said:\n%s", msgs)
			}
			finish(t, tm, img)
		})
	}
}

// mixedBGFill writes files of 1 to 6 MiB (a third of them half zeros)
// until one fails with ENOSPC, then small files until creating or
// writing one fails with ENOSPC; any other error fails the test. The
// files that failed are removed (what writeback could not store is the
// limit of the writeback cache, not what is tested here). It returns the
// content of every file written.
func mixedBGFill(t *testing.T, tm *testMount, r *rand.Rand, prefix string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	failed := func(name string, err error) bool {
		t.Helper()
		if err == nil {
			return false
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s: %v, want success or ENOSPC", name, err)
		}
		t.Logf("%v", err) // which call said ENOSPC: open, write or sync
		if rerr := os.Remove(tm.path(name)); rerr != nil && !os.IsNotExist(rerr) {
			t.Fatalf("remove %s after ENOSPC: %v", name, rerr)
		}
		return true
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-big%03d", prefix, i)
		data := make([]byte, (1+r.Intn(6))<<20-r.Intn(3)*1000)
		if i%3 == 0 {
			r.Read(data[:len(data)/2])
		} else {
			r.Read(data)
		}
		if failed(name, mixedBGWriteFile(tm.path(name), data)) {
			t.Logf("data full after %d large files", i)
			break
		}
		files[name] = data
	}
	for i := 0; i < 100000; i++ {
		name := fmt.Sprintf("%s-small%05d", prefix, i)
		data := make([]byte, 100+r.Intn(1900))
		r.Read(data)
		if failed(name, mixedBGWriteFile(tm.path(name), data)) {
			t.Logf("metadata full after %d small files", i)
			break
		}
		files[name] = data
	}
	must(t, tm.Sync())
	return files
}

// mixedBGVerify compares the mount's top directory with files.
func mixedBGVerify(t *testing.T, tm *testMount, files map[string][]byte) {
	t.Helper()
	ents, err := os.ReadDir(tm.dir)
	must(t, err)
	if len(ents) != len(files) {
		t.Fatalf("the mount shows %d files, %d were written", len(ents), len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(tm.path(name))
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes differ from the %d written", name, len(got), len(want))
		}
	}
}

func mixedBGTotal(files map[string][]byte) (n int) {
	for _, b := range files {
		n += len(b)
	}
	return n
}

// TestMixedBGFuseStream writes one stream to a mixed image through the
// mount, as dd does, until write(2) or fsync fails with ENOSPC, and keeps
// the file: a sync then works (the daemon took no more than it can store:
// concurrent WRITEs see each other's reservation), the mount shows what is
// on disk (the kernel mount after unmount shows the same size and
// content), the file can be read, cut and removed on the full filesystem,
// and the space comes back.
func TestMixedBGFuseStream(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	img := newMixedBGImage(t, 128<<20)
	tm := mountImage(t, img, Options{})
	availEmpty := mixedBGAvail(t, tm.dir)
	f, err := os.Create(tm.path("stream"))
	must(t, err)
	chunk := make([]byte, 1<<20)
	rand.New(rand.NewSource(2)).Read(chunk)
	var werr error
	written := 0
	for i := 0; i < 400 && werr == nil; i++ {
		if _, werr = f.Write(chunk); werr == nil {
			written++
		}
	}
	if werr == nil {
		werr = f.Sync()
	}
	wantErrno(t, "streaming into a mixed filesystem", werr, syscall.ENOSPC)
	t.Logf("%d MiB accepted before %v", written, werr)
	f.Close()
	must(t, tm.Sync())
	st, err := os.Stat(tm.path("stream"))
	must(t, err)
	t.Logf("the mount shows %d MiB; statfs avail %d KiB", st.Size()>>20, mixedBGAvail(t, tm.dir)>>10)
	// The kernel's writeback cache took every write(2) and set the size;
	// the WRITEs that found no space failed, fsync said so, and their
	// bytes read as holes: every 4 KiB block holds the stream's bytes or
	// zeros.
	got, err := os.ReadFile(tm.path("stream"))
	must(t, err)
	stored, zero := 0, make([]byte, 4096)
	for off := 0; off < len(got); off += 4096 {
		b := got[off:min(off+4096, len(got))]
		switch {
		case bytes.Equal(b, chunk[off%len(chunk):off%len(chunk)+len(b)]):
			stored += len(b)
		case !bytes.Equal(b, zero[:len(b)]):
			t.Fatalf("the stream read back holds other bytes than its own or zeros at %d", off)
		}
	}
	t.Logf("%d MiB of the stream stored", stored>>20)
	if stored < 100<<20 {
		t.Errorf("only %d MiB of the stream stored on a 128 MiB mixed filesystem", stored>>20)
	}
	// the full filesystem still takes a cut, a small file and removals
	must(t, os.Truncate(tm.path("stream"), 90<<20))
	must(t, os.WriteFile(tm.path("small"), []byte("after the stream"), 0o644))
	must(t, tm.Sync())
	availCut := mixedBGAvail(t, tm.dir)
	if availCut < 8<<20 {
		t.Errorf("statfs avail %d KiB after cutting the stream to 90 MiB", availCut>>10)
	}
	must(t, os.WriteFile(tm.path("again"), bytes.Repeat(chunk, 5), 0o644))
	must(t, tm.Sync())
	// what the mount shows is what is on disk (finish compares with Linux)
	fuseView := takeManifest(t, tm.dir)
	tm.unmount()
	checktest.Image(t, img)
	if kv, ok := kernelManifest(t, img); ok {
		if d := fuseView.diff(kv); len(d) > 0 {
			t.Fatalf("kernel mount differs from the FUSE mount:\n%v", d)
		}
	}
	tm = mountImage(t, img, Options{})
	for _, n := range []string{"stream", "small", "again"} {
		must(t, os.Remove(tm.path(n)))
	}
	must(t, tm.Sync())
	if a := mixedBGAvail(t, tm.dir); a < availEmpty*9/10 {
		t.Errorf("statfs avail %d KiB after removing everything, %d KiB empty", a>>10, availEmpty>>10)
	}
	finish(t, tm, img)
}

// TestMixedBGFsyncLog: on a mixed image, fsync(2) of files written after
// the last commit goes through the log tree (its blocks come from the
// DATA|METADATA groups too): a copy of the image taken right after the
// fsyncs has a log root, btrfs check accepts it, Linux replays the
// fsync'd files, and so does our own open (which replays and commits);
// both checkers then find the image clean. The same on the full image
// after filling it: fsync either logs or commits, never fails otherwise.
func TestMixedBGFsyncLog(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	img := newMixedBGImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	must(t, os.WriteFile(tm.path("base"), []byte("committed"), 0o644))
	must(t, tm.Sync())
	r := rand.New(rand.NewSource(31))
	want := map[string][]byte{}
	fsyncFile := func(name string, n int) error {
		b := make([]byte, n)
		r.Read(b)
		f, err := os.Create(tm.path(name))
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Write(b); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		want[name] = b
		return nil
	}
	for i := 0; i < 20; i++ {
		must(t, fsyncFile(fmt.Sprintf("log%02d", i), 100+r.Intn(300000)))
	}
	crash := filepath.Join(t.TempDir(), "crash.img")
	if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if sb := readSuperOf(t, crash); sb.LogRoot == 0 {
		t.Fatalf("no log root after fsyncs without a commit (stats %+v)", tm.m.rw.ops.FsyncStats())
	}
	checktest.Image(t, crash)
	crash2 := crash + ".ours"
	if out, err := exec.Command("cp", "--sparse=always", crash, crash2).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if canKernelMount() {
		dir := testutil.LoopMount(t, crash, "")
		for name, b := range want {
			if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, b) {
				t.Errorf("kernel replay: %s: %d bytes (%v), want %d", name, len(got), err, len(b))
			}
		}
		testutil.Unmount(t, dir)
		checktest.Image(t, crash)
	}
	// our own replay
	ours := mountImage(t, crash2, Options{})
	for name, b := range want {
		if got, err := os.ReadFile(ours.path(name)); err != nil || !bytes.Equal(got, b) {
			t.Errorf("our replay: %s: %d bytes (%v), want %d", name, len(got), err, len(b))
		}
	}
	ours.unmount()
	checktest.Image(t, crash2)

	// fill, then fsync small files on the full filesystem
	big := make([]byte, 1<<20)
	for i := 0; ; i++ {
		r.Read(big)
		name := fmt.Sprintf("fill%03d", i)
		if err := mixedBGWriteFile(tm.path(name), big); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("%s: %v", name, err)
			}
			must(t, os.Remove(tm.path(name)))
			break
		}
		want[name] = append([]byte(nil), big...)
	}
	logged := 0
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("full%03d", i)
		if err := fsyncFile(name, 100+r.Intn(2000)); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fsync %s on a full mixed filesystem: %v", name, err)
			}
			os.Remove(tm.path(name))
			break
		}
		logged++
	}
	t.Logf("%d small files fsync'd on the full filesystem; fsync stats %+v", logged, tm.m.rw.ops.FsyncStats())
	for name, b := range want {
		if got, err := os.ReadFile(tm.path(name)); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("%s: %d bytes (%v), want %d", name, len(got), err, len(b))
		}
	}
	finish(t, tm, img)
}
