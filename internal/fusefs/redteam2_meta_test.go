package fusefs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// red2FillData writes 1 MiB chunks (each fsync'd, so no cache holds them)
// into name until the filesystem refuses one: every chunk the device had
// left is then a data chunk. It returns the MiB stored.
func red2FillData(t *testing.T, tm *testMount, name string) int {
	t.Helper()
	f, err := os.Create(tm.path(name))
	must(t, err)
	defer f.Close()
	chunk := bytes.Repeat([]byte{0x5e}, 1<<20)
	n := 0
	for ; n < 1000; n++ {
		if _, err := f.WriteAt(chunk, int64(n)<<20); err != nil {
			break
		}
		if err := f.Sync(); err != nil {
			break
		}
	}
	// what the last refused chunk left (a refused fsync leaves the
	// kernel's size): cut to what was stored
	must(t, f.Truncate(int64(n)<<20))
	must(t, f.Sync())
	return n
}

// red2FillMeta fills the metadata space with xattrs of 12 KiB on a new
// file name (one leaf each) until setxattr fails. It returns how many
// were set and the error that stopped it.
func red2FillMeta(t *testing.T, tm *testMount, name string) (int, error) {
	t.Helper()
	p := tm.path(name)
	must(t, os.WriteFile(p, nil, 0o644))
	v := bytes.Repeat([]byte{0x3c}, 12<<10)
	for i := 0; i < 100000; i++ {
		if err := unix.Setxattr(p, fmt.Sprintf("user.red2.%06d", i), v, 0); err != nil {
			return i, err
		}
	}
	return 100000, nil
}

// TestRed2MetaFullKeepsBuffered: data buffered (write(2) returned) while
// there is data space, then the metadata space filled by something else
// (xattrs) on a device with no room for a new metadata chunk. Writing
// the buffered data back needs metadata too (its file extent, extent and
// checksum items): kernel btrfs reserves that at write(2) with the data
// (btrfs_delalloc_reserve_metadata), so the fsync that follows succeeds
// and the bytes are on disk. Both cache modes.
func TestRed2MetaFullKeepsBuffered(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name string
		o    Options
	}{{"no_writeback_cache", Options{NoWritebackCache: true}}, {"writeback_cache", Options{}},
		{"zstd_no_writeback_cache", Options{NoWritebackCache: true, Compress: "zstd"}}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 192<<20)
			tm := mountImage(t, img, c.o)
			mib := red2FillData(t, tm, "fill")
			// 24 MiB of data space back, in the data chunks
			must(t, os.Truncate(tm.path("fill"), int64(mib-24)<<20))
			must(t, tm.Sync())
			want := make([]byte, 4<<20)
			rand.New(rand.NewSource(2)).Read(want)
			f, err := os.Create(tm.path("buf"))
			must(t, err)
			defer f.Close()
			// many small writes apart: many extents to write back
			accepted := 0
			var werr error
			for off := 0; off < len(want); off += 64 << 10 {
				if _, werr = f.WriteAt(want[off:off+16<<10], int64(off)); werr != nil {
					break
				}
				accepted = off + 16<<10
			}
			// written, and deleted, with the metadata full
			must(t, os.WriteFile(tm.path("late"), nil, 0o644))
			for i := 0; i < 20; i++ {
				must(t, os.WriteFile(tm.path(fmt.Sprintf("victim%d", i)), bytes.Repeat([]byte{1}, 5000), 0o644))
			}
			must(t, os.Mkdir(tm.path("vdir"), 0o755))
			n, xerr := red2FillMeta(t, tm, "meta")
			t.Logf("data: %d MiB filled; buf: %d bytes accepted (%v); %d xattrs of 12 KiB before %v", mib, accepted, werr, n, xerr)
			if !errors.Is(xerr, syscall.ENOSPC) {
				t.Fatalf("setxattr stopped with %v, want ENOSPC", xerr)
			}
			for i := 0; i < 20; i++ {
				if err := os.Remove(tm.path(fmt.Sprintf("victim%d", i))); err != nil {
					t.Errorf("unlink with the metadata full and data buffered: %v", err)
					break
				}
			}
			if err := os.Remove(tm.path("vdir")); err != nil {
				t.Errorf("rmdir with the metadata full and data buffered: %v", err)
			}
			serr := f.Sync()
			cerr := f.Close()
			if werr == nil && (serr != nil || cerr != nil) {
				// With the writeback cache the kernel took write(2)
				// before the daemon saw it (and while there was room):
				// its refusal can only come at fsync (wbfail.go). With
				// every write sent to the daemon, write(2) itself
				// refuses what cannot be stored.
				if c.o.NoWritebackCache {
					t.Errorf("every write(2) was accepted, then fsync: %v, close: %v", serr, cerr)
				} else {
					t.Logf("writeback cache: fsync %v, close %v", serr, cerr)
				}
			}
			if serr != nil {
				accepted = 0 // not promised
			}
			// A file opened now, with the metadata full: a write(2) that
			// returns has its bytes stored, or the filesystem refused it.
			g, err := os.OpenFile(tm.path("late"), os.O_WRONLY, 0)
			var late []byte
			if err == nil {
				b := bytes.Repeat([]byte{0x1a}, 64<<10)
				for i := 0; i < 64; i++ {
					if _, err := g.Write(b); err != nil {
						t.Logf("late: write %d: %v", i, err)
						break
					}
					late = append(late, b...)
				}
				if err := g.Sync(); err != nil {
					t.Errorf("late: %d bytes taken by write(2) with the metadata full, then fsync: %v", len(late), err)
					late = nil
				}
				g.Close()
			} else {
				t.Logf("late: create: %v", err)
			}
			shownBuf, _ := os.ReadFile(tm.path("buf"))
			if msgs := tm.logBuf.String(); msgs != "" {
				t.Logf("daemon said:\n%s", firstLines(msgs, 10))
			}
			// deleting works on the full filesystem, and gives space back
			must(t, os.Remove(tm.path("meta")))
			must(t, tm.Sync())
			must(t, os.WriteFile(tm.path("after"), bytes.Repeat([]byte{7}, 64<<10), 0o644))
			tm.unmount()
			fsys, err := gobtrfs.Open(img, nil)
			must(t, err)
			got, err := fsys.ReadFile("buf")
			must(t, err)
			gotLate, lerr := fsys.ReadFile("late")
			fsys.Close()
			if !bytes.Equal(shownBuf, got) {
				t.Errorf("buf: the mount showed %d bytes, %d on disk", len(shownBuf), len(got))
			}
			for off := 0; off < accepted; off += 64 << 10 {
				if off+16<<10 > len(got) || !bytes.Equal(got[off:off+16<<10], want[off:off+16<<10]) {
					t.Errorf("buf at %d: accepted bytes not on disk (file %d bytes)", off, len(got))
					break
				}
			}
			if len(late) > 0 && (lerr != nil || !bytes.Equal(gotLate[:min(len(late), len(gotLate))], late) || len(gotLate) < len(late)) {
				t.Errorf("late: %d bytes fsync'd, %d on disk (%v)", len(late), len(gotLate), lerr)
			}
			checktest.Image(t, img)
		})
	}
}

// TestRed2CopyRangeWhenFull: copy_file_range at offsets no reflink can
// take copies through the page cache; near a full filesystem the copy
// must be refused (or come up short) at the call, never be taken and
// then lost at writeback: the bytes the call reported copied are on disk
// after fsync, and the mount shows what is on disk.
func TestRed2CopyRangeWhenFull(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	for _, c := range []struct {
		name string
		o    Options
	}{{"no_writeback_cache", Options{NoWritebackCache: true}}, {"writeback_cache", Options{}}} {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 192<<20)
			tm := mountImage(t, img, c.o)
			src := make([]byte, 24<<20)
			rand.New(rand.NewSource(3)).Read(src)
			must(t, os.WriteFile(tm.path("src"), src, 0o644))
			must(t, os.WriteFile(tm.path("dst"), nil, 0o644))
			mib := red2FillData(t, tm, "fill")
			must(t, os.Truncate(tm.path("fill"), int64(mib-4)<<20)) // 4 MiB free
			must(t, tm.Sync())
			sf, err := os.Open(tm.path("src"))
			must(t, err)
			defer sf.Close()
			df, err := os.OpenFile(tm.path("dst"), os.O_WRONLY, 0)
			must(t, err)
			// unaligned: no reflink
			soff, doff := int64(100), int64(7)
			n, cerr := unix.CopyFileRange(int(sf.Fd()), &soff, int(df.Fd()), &doff, 16<<20, 0)
			serr := df.Sync()
			df.Close()
			sf.Close()
			t.Logf("copy_file_range of 16 MiB with 4 MiB free: %d, %v; fsync: %v", n, cerr, serr)
			if n > 0 && serr != nil {
				t.Errorf("copy_file_range reported %d bytes copied, then fsync: %v", n, serr)
			}
			shown, err := os.ReadFile(tm.path("dst"))
			must(t, err)
			tm.unmount()
			fsys, err := gobtrfs.Open(img, nil)
			must(t, err)
			got, err := fsys.ReadFile("dst")
			fsys.Close()
			must(t, err)
			if !bytes.Equal(shown, got) {
				t.Errorf("dst: the mount showed %d bytes, %d on disk", len(shown), len(got))
			}
			if serr == nil && n > 0 {
				if len(got) < 7+n || !bytes.Equal(got[7:7+n], src[100:100+n]) {
					t.Errorf("dst: %d bytes copied and fsync'd, not on disk (%d bytes)", n, len(got))
				}
			}
			checktest.Image(t, img)
		})
	}
}

// TestRed2CreatesBesideBuffered: with the metadata nearly full, the
// metadata held for buffered data (metarsv.go) must not refuse a create
// that fits once that data is written back: the kernel flushes delalloc
// when a reservation fails (flush_space), so does the mount. As many
// files are created with a buffered write pending as without one.
func TestRed2CreatesBesideBuffered(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	img := newImage(t, 192<<20)
	tm := mountImage(t, img, Options{NoWritebackCache: true})
	mib := red2FillData(t, tm, "fill")
	must(t, os.Truncate(tm.path("fill"), int64(mib-24)<<20))
	n, err := red2FillMeta(t, tm, "meta")
	t.Logf("%d xattrs: %v", n, err)
	creates := func(prefix string) int {
		i := 0
		for ; i < 2000; i++ {
			if err := os.Mkdir(tm.path(fmt.Sprintf("%s%04d", prefix, i)), 0o755); err != nil {
				break
			}
		}
		for j := 0; j < i; j++ {
			must(t, os.Remove(tm.path(fmt.Sprintf("%s%04d", prefix, j))))
		}
		must(t, tm.Sync())
		return i
	}
	for i := 0; i < 200; i++ {
		must(t, unix.Removexattr(tm.path("meta"), fmt.Sprintf("user.red2.%06d", i)))
	}
	must(t, tm.Sync())
	fallocs := func(name string) int {
		fd, err := unix.Open(tm.path(name), unix.O_CREAT|unix.O_WRONLY, 0o644)
		must(t, err)
		defer unix.Close(fd)
		i := 0
		for ; i < 300; i++ {
			if unix.Fallocate(fd, 0, int64(i)*8192, 4096) != nil {
				break
			}
		}
		return i
	}
	alone := creates("a")
	falloc := fallocs("fa")
	f, err := os.Create(tm.path("buf"))
	must(t, err)
	defer f.Close()
	_, werr := f.Write(bytes.Repeat([]byte{3}, 64<<10))
	beside := creates("b")
	if _, err := f.WriteAt(bytes.Repeat([]byte{4}, 64<<10), 1<<20); err != nil { // the creates wrote the first back
		t.Fatalf("second buffered write: %v", err)
	}
	fallocBeside := fallocs("fb")
	t.Logf("%d directories made alone, %d beside a buffered write (%v)", alone, beside, werr)
	if beside < alone-2 {
		t.Errorf("with a buffered write pending, %d directories could be made, %d without", beside, alone)
	}
	t.Logf("%d fallocates alone, %d beside a buffered write", falloc, fallocBeside)
	if fallocBeside < falloc-2 {
		t.Errorf("with a buffered write pending, %d fallocates, %d without", fallocBeside, falloc)
	}
	f.Close()
	finish(t, tm, img)
}

// TestRed2DeepTreeFillsMetadata: directories nested with long names, each
// with a small inline file, until the metadata runs out (the data has
// room: a 64 KiB file is buffered meanwhile); then the buffered file's
// fsync succeeds, the whole tree is removed, the metadata comes back, and
// the image checks clean.
func TestRed2DeepTreeFillsMetadata(t *testing.T) {
	needFuse(t)
	t.Parallel() // its own image and mount: runs beside the others
	img := newImage(t, 160<<20)
	tm := mountImage(t, img, Options{NoWritebackCache: true})
	mib := red2FillData(t, tm, "fill")
	must(t, os.Truncate(tm.path("fill"), int64(mib-16)<<20))
	must(t, tm.Sync())
	f, err := os.Create(tm.path("buf"))
	must(t, err)
	want := bytes.Repeat([]byte("buffered"), 8192)
	_, werr := f.Write(want)
	must(t, werr)
	long := string(bytes.Repeat([]byte("d"), 40))
	dir := tm.dir
	var dirs []string
	var ferr error
	for i := 0; i < 20000; i++ {
		d := dir + "/" + fmt.Sprintf("%s%04d", long, i)
		if ferr = os.Mkdir(d, 0o755); ferr != nil {
			break
		}
		dirs = append(dirs, d)
		if ferr = os.WriteFile(d+"/f", bytes.Repeat([]byte{byte(i)}, 1500), 0o644); ferr != nil {
			break
		}
		if i%400 == 0 {
			dir = d // nested, within PATH_MAX
		}
	}
	t.Logf("%d directories before %v", len(dirs), ferr)
	if !errors.Is(ferr, syscall.ENOSPC) {
		f.Close()
		t.Fatalf("stopped by %v, want ENOSPC", ferr)
	}
	if err := f.Sync(); err != nil {
		t.Errorf("the buffered file's fsync with the metadata full: %v", err)
	}
	f.Close()
	for i := len(dirs) - 1; i >= 0; i-- {
		os.Remove(dirs[i] + "/f")
		if err := os.Remove(dirs[i]); err != nil {
			t.Fatalf("rmdir %d with the metadata full: %v", i, err)
		}
	}
	must(t, tm.Sync())
	for i := 0; i < 200; i++ {
		must(t, os.Mkdir(tm.path(fmt.Sprintf("again%03d", i)), 0o755))
	}
	got, err := os.ReadFile(tm.path("buf"))
	must(t, err)
	if !bytes.Equal(got, want) {
		t.Errorf("buf: %d bytes, want the %d written", len(got), len(want))
	}
	finish(t, tm, img)
}
