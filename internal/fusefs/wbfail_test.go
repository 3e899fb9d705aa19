package fusefs

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// TestWritebackFailureShowsDisk: a full filesystem, then small files
// written, fsync'd and closed, each refused somewhere on the way (write,
// fsync or close). Whatever the mount shows of each file afterwards is
// what is on disk after the unmount: no size or bytes the image does not
// hold, in either cache mode (with the writeback cache the kernel takes
// write(2) before the daemon sees it, and keeps its own i_size).
func TestWritebackFailureShowsDisk(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name  string
		o     Options
		mixed bool // mkfs.btrfs --mixed: data and metadata share the groups
	}{{"writeback_cache", Options{}, false}, {"no_writeback_cache", Options{NoWritebackCache: true}, false},
		{"mixed,writeback_cache", Options{}, true}, {"mixed,no_writeback_cache", Options{NoWritebackCache: true}, true}} {
		t.Run(c.name, func(t *testing.T) {
			var img string
			if c.mixed {
				img = newMixedBGImage(t, 128<<20)
			} else {
				img = newImage(t, 192<<20) // 112 MiB of data space
			}
			tm := mountImage(t, img, c.o)
			fill := func(name string, chunk int, max int) int {
				f, err := os.Create(tm.path(name))
				if err != nil {
					return 0
				}
				b := bytes.Repeat([]byte{0x77}, chunk)
				n := 0
				for ; n < max; n++ {
					if _, err := f.Write(b); err != nil {
						break
					}
				}
				f.Sync()
				f.Close()
				return n
			}
			t.Logf("datafill: write(2) took %d MiB before a refusal", fill("fill", 1<<20, 300))
			rng := rand.New(rand.NewSource(1))
			accepted, failed := 0, 0
			want := map[string][]byte{}
			for i := 0; i < 300; i++ {
				name := fmt.Sprintf("small%04d", i)
				b := make([]byte, 12288)
				rng.Read(b)
				f, err := os.Create(tm.path(name))
				if err != nil {
					failed++
					continue
				}
				n, werr := f.Write(b)
				accepted += n
				serr := f.Sync()
				cerr := f.Close()
				if werr != nil || serr != nil || cerr != nil {
					failed++
				}
				want[name] = b[:n]
			}
			fill("frag", 4096, 4096)
			t.Logf("write(2) accepted %d bytes in %d files; %d with errors", accepted, len(want), failed)
			want["fill"], want["frag"] = bytes.Repeat([]byte{0x77}, 300<<20), bytes.Repeat([]byte{0x77}, 4096*4096)
			// what the mount shows
			shown := map[string][]byte{}
			for name := range want {
				b, err := os.ReadFile(tm.path(name))
				if err != nil && !os.IsNotExist(err) {
					t.Errorf("read %s through the mount: %v", name, err)
					continue
				}
				shown[name] = b // nil: no such file (its create was refused)
			}
			tm.unmount()
			if msgs := tm.logBuf.String(); msgs != "" {
				t.Logf("daemon said:\n%s", firstLines(msgs, 10))
			}
			fsys, err := gobtrfs.Open(img, nil)
			must(t, err)
			defer fsys.Close()
			var bad []string
			for name, s := range shown {
				d, err := fsys.ReadFile(name)
				if err != nil && !os.IsNotExist(err) {
					t.Errorf("read %s from the image: %v", name, err)
					continue
				}
				if !bytes.Equal(s, d) {
					bad = append(bad, fmt.Sprintf("%s: %d bytes shown, %d on disk", name, len(s), len(d)))
				} else if i := notWritten(d, want[name]); i >= 0 {
					bad = append(bad, fmt.Sprintf("%s: byte %d on disk was not written there", name, i))
				}
			}
			if len(bad) > 0 {
				t.Errorf("%d files: the mount showed what is not on disk, e.g. %v", len(bad), bad[:min(3, len(bad))])
			}
		})
	}
}

func firstLines(s string, n int) string {
	l := bytes.SplitN([]byte(s), []byte("\n"), n+1)
	if len(l) > n {
		l = l[:n]
	}
	return string(bytes.Join(l, []byte("\n")))
}

// notWritten returns the first offset of disk that holds neither what was
// written there nor zero (a hole: a range whose writeback was refused while
// later ones were not), or -1.
func notWritten(disk, written []byte) int {
	for i, b := range disk {
		if b != 0 && (i >= len(written) || b != written[i]) {
			return i
		}
	}
	return -1
}

// TestPreallocWriteWhenFull: writes into a preallocated range of a file
// succeed on a full filesystem, as on kernel btrfs (they need no new
// space: seed 001 checks for that when the reservation fails), while a
// write elsewhere is refused; the bytes are on disk after the unmount.
func TestPreallocWriteWhenFull(t *testing.T) {
	needFuse(t)
	img := newImage(t, 192<<20)
	tm := mountImage(t, img, Options{})
	f, err := os.Create(tm.path("pre"))
	must(t, err)
	must(t, unix.Fallocate(int(f.Fd()), 0, 0, 8<<20))
	must(t, f.Sync())
	// fill, each chunk fsync'd so that the kernel's cache holds nothing
	g, err := os.Create(tm.path("fill"))
	must(t, err)
	chunk := bytes.Repeat([]byte{0x33}, 1<<20)
	full := false
	for i := 0; i < 400 && !full; i++ {
		if _, err := g.Write(chunk); err != nil || g.Sync() != nil {
			full = true
		}
	}
	g.Close()
	if !full {
		t.Fatal("400 MiB fit in a 192 MiB filesystem")
	}
	must(t, tm.Sync())
	want := bytes.Repeat([]byte("prealloc"), 512) // 4 KiB
	for off := int64(0); off < 8<<20; off += 1 << 20 {
		if _, err := f.WriteAt(want, off); err != nil {
			t.Fatalf("write into the preallocated range at %d on a full filesystem: %v", off, err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync of writes into the preallocated range: %v", err)
	}
	must(t, f.Close())
	h, err := os.Create(tm.path("new"))
	must(t, err)
	_, werr := h.Write(chunk)
	if werr == nil {
		werr = h.Sync()
	}
	h.Close()
	wantErrno(t, "a new file's write on the full filesystem", werr, syscall.ENOSPC)
	must(t, os.Remove(tm.path("new")))
	tm.unmount()
	fsys, err := gobtrfs.Open(img, nil)
	must(t, err)
	defer fsys.Close()
	got, err := fsys.ReadFile("pre")
	must(t, err)
	for off := 0; off < 8<<20; off += 1 << 20 {
		if !bytes.Equal(got[off:off+len(want)], want) {
			t.Errorf("pre at %d: not the bytes written", off)
		}
	}
	checktest.Image(t, img)
}

// TestNearFullWriteTimes: near a full filesystem a file opened for
// writing bypasses the kernel's cache (so write(2) gets the ENOSPC), and
// the kernel stamps no time for such writes in the writeback cache mode:
// a write that succeeds there must still move mtime, on the mount once
// the file is closed and on disk.
func TestNearFullWriteTimes(t *testing.T) {
	needFuse(t)
	img := newImage(t, 192<<20)
	tm := mountImage(t, img, Options{})
	chunk := bytes.Repeat([]byte{0x44}, 1<<20)
	n := 0
	for ; n < 400; n++ {
		f, err := os.Create(tm.path(fmt.Sprintf("fill%d", n)))
		must(t, err)
		_, werr := f.Write(chunk)
		serr := f.Sync()
		f.Close()
		if werr != nil || serr != nil {
			must(t, os.Remove(tm.path(fmt.Sprintf("fill%d", n))))
			break
		}
	}
	for i := 0; i < 4; i++ {
		must(t, os.Remove(tm.path(fmt.Sprintf("fill%d", i))))
	}
	must(t, tm.Sync())
	must(t, os.WriteFile(tm.path("t"), []byte("x"), 0o644))
	var st0 unix.Stat_t
	must(t, unix.Stat(tm.path("t"), &st0))
	time.Sleep(50 * time.Millisecond)
	f, err := os.OpenFile(tm.path("t"), os.O_WRONLY, 0)
	must(t, err)
	if _, err := f.WriteAt(bytes.Repeat([]byte{1}, 8192), 4096); err != nil {
		t.Fatalf("a write of 8 KiB with ~4 MiB free: %v", err)
	}
	must(t, f.Close())
	var st1 unix.Stat_t
	for i := 0; i < 100; i++ { // the RELEASE that makes the kernel drop its inode follows close(2)
		must(t, unix.Stat(tm.path("t"), &st1))
		if st1.Mtim != st0.Mtim {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st1.Mtim == st0.Mtim || st1.Size != 12288 {
		t.Fatalf("after a write near a full filesystem: mtime %v size %d (before: %v)", time.Unix(st1.Mtim.Unix()), st1.Size, time.Unix(st0.Mtim.Unix()))
	}
	tm.unmount()
	fsys, err := gobtrfs.Open(img, nil)
	must(t, err)
	defer fsys.Close()
	fi, err := fsys.Stat("t")
	must(t, err)
	if got, want := fi.ModTime(), time.Unix(st1.Mtim.Unix()); !got.Equal(want) {
		t.Errorf("stored mtime %v, the mount showed %v", got, want)
	}
	checktest.Image(t, img)
}

// TestReservationsComeBack: writers racing to fill the filesystem, with
// overwrites, truncates and deletes of buffered data among them; once
// everything is written back, no data space is held any more (the mount's
// pool and fsops' reservations are zero), and after deleting every file
// the whole space can be written again.
func TestReservationsComeBack(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	img := newImage(t, 192<<20)
	tm := mountImage(t, img, Options{})
	fillOnce := func(round int) int64 {
		var wg sync.WaitGroup
		var written, refused atomic.Int64
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(int64(round*10 + w)))
				buf := make([]byte, 256<<10)
				for i := 0; i < 400; i++ {
					name := tm.path(fmt.Sprintf("w%d-%d", w, i%40))
					f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o644)
					if err != nil {
						return
					}
					rng.Read(buf)
					n, werr := f.WriteAt(buf, int64(rng.Intn(32))<<18)
					var serr error
					switch rng.Intn(12) {
					case 0:
						f.Truncate(int64(rng.Intn(1 << 20)))
					case 1:
						os.Remove(name)
					case 2, 3, 4:
						serr = f.Sync()
					}
					cerr := f.Close()
					written.Add(int64(n))
					if werr != nil || serr != nil || cerr != nil {
						refused.Add(1)
					}
				}
			}(w)
		}
		wg.Wait()
		t.Logf("round %d: %d bytes written, %d writes refused", round, written.Load(), refused.Load())
		if refused.Load() == 0 {
			t.Errorf("round %d never filled the filesystem", round)
		}
		return written.Load()
	}
	held := func(when string) {
		t.Helper()
		must(t, tm.Sync())
		if p, s := tm.m.rw.rsv.Load(), tm.m.rw.ops.Stats().DataReserved; p != 0 || s != 0 {
			t.Errorf("%s: %d bytes still held by the mount's pool, %d reserved in fsops, with nothing buffered (pending %d)", when, p, s, tm.m.rw.cache.Pending())
		}
	}
	fillOnce(1)
	held("after round 1")
	ents, err := os.ReadDir(tm.dir)
	must(t, err)
	for _, e := range ents {
		must(t, os.Remove(tm.path(e.Name())))
	}
	held("after deleting everything")
	// the whole space again, in one file
	f, err := os.Create(tm.path("all"))
	must(t, err)
	chunk := bytes.Repeat([]byte{9}, 1<<20)
	n := 0
	for ; n < 400; n++ {
		if _, err := f.Write(chunk); err != nil {
			break
		}
		if n%16 == 15 && f.Sync() != nil {
			break
		}
	}
	f.Close()
	if n < 100 {
		t.Errorf("after deleting everything only %d MiB fit again (112 MiB of data space)", n)
	}
	t.Logf("%d MiB written again", n)
	must(t, os.Remove(tm.path("all")))
	finish(t, tm, img)
}
