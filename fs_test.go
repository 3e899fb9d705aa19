package gobtrfs_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var seedFlag = flag.Int64("seed", 0, "random seed (0: time-based)")

func seed(t testing.TB) int64 { return testutil.Seed(t, *seedFlag) }

// mkfsSource builds the standard source tree and an image of it.
func mkfsSource(t *testing.T, args ...string) (src, img string) {
	return testimg.MkfsSource(t, testimg.SourceOptions{Seed: seed(t), ManyFiles: 300}, 256<<20, args...)
}

// TestFSAgainstSource opens mkfs.btrfs images in several configurations and
// checks every entry against the source tree through the io/fs API, then runs
// testing/fstest over the whole FS.
func TestFSAgainstSource(t *testing.T) {
	for _, cfg := range [][]string{
		{"--csum", "crc32c", "-n", "16384", "-m", "dup"},
		{"--csum", "blake2", "-n", "4096", "-m", "single"},
	} {
		t.Run(strings.Join(cfg, " "), func(t *testing.T) {
			src, img := mkfsSource(t, cfg...)
			quirks := testimg.ProbeMkfs(t)
			fsys, err := gobtrfs.Open(img, &gobtrfs.Options{Warn: func(s string) { t.Log("warn:", s) }})
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			checkAgainstSource(t, fsys, src, quirks)
			// fstest opens every entry, so give it subtrees without dangling symlinks
			for _, dir := range []string{"files", "names", "modes"} {
				sub, err := fs.Sub(fsys, dir)
				if err != nil {
					t.Fatal(err)
				}
				ents, _ := os.ReadDir(filepath.Join(src, dir))
				var want []string
				for _, e := range ents {
					want = append(want, e.Name())
				}
				start := time.Now()
				if err := fstest.TestFS(sub, want...); err != nil {
					t.Fatalf("fstest %s: %v", dir, err)
				}
				t.Logf("fstest %s: %v", dir, time.Since(start))
			}
		})
	}
}

func checkAgainstSource(t *testing.T, fsys *gobtrfs.FS, src string, q testimg.MkfsQuirks) {
	inodes := map[uint64]string{} // source ino -> first path
	ours := map[string]gobtrfs.InodeKey{}
	n := 0
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		name := filepath.ToSlash(rel)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		fi, err := fsys.Lstat(name)
		if err != nil {
			t.Errorf("lstat %s: %v", name, err)
			return nil
		}
		n++
		s := fi.Sys().(*gobtrfs.Stat)
		if name != "." {
			if s.Mode != st.Mode {
				t.Errorf("%s: mode %o, want %o", name, s.Mode, st.Mode)
			}
			if s.UID != st.Uid || s.GID != st.Gid {
				t.Errorf("%s: owner %d:%d, want %d:%d", name, s.UID, s.GID, st.Uid, st.Gid)
			}
			wantNs := st.Mtim.Nsec
			if q.DropsNsec {
				wantNs = 0
			}
			if s.Mtime.Unix() != st.Mtim.Sec || int64(s.Mtime.Nanosecond()) != wantNs {
				t.Errorf("%s: mtime %v, want %d.%09d", name, s.Mtime, st.Mtim.Sec, wantNs)
			}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			want, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got, err := fsys.ReadFile(name)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: content differs (%d vs %d bytes, err %v)", name, len(got), len(want), err)
			}
			if st.Nlink > 1 {
				if first, ok := inodes[st.Ino]; ok {
					if ours[first] != (gobtrfs.InodeKey{Subvol: s.Subvol, Ino: s.Ino}) {
						t.Errorf("%s: not the same inode as its hard link %s", name, first)
					}
				} else {
					inodes[st.Ino] = name
					ours[name] = gobtrfs.InodeKey{Subvol: s.Subvol, Ino: s.Ino}
				}
			}
		case unix.S_IFLNK:
			want, _ := os.Readlink(p)
			got, err := fsys.ReadLink(name)
			if err != nil || got != want {
				t.Errorf("%s: readlink %q %v, want %q", name, got, err, want)
			}
		case unix.S_IFDIR:
			want, _ := os.ReadDir(p)
			got, err := fsys.ReadDir(name)
			if err != nil || len(got) != len(want) {
				t.Errorf("%s: readdir %d entries %v, want %d", name, len(got), err, len(want))
			}
		}
		wx, _ := testimg.Xattrs(p)
		gx, err := fsys.Xattrs(name)
		if err != nil {
			t.Errorf("%s: xattrs: %v", name, err)
		}
		if len(gx) != len(wx) {
			t.Errorf("%s: %d xattrs, want %d", name, len(gx), len(wx))
		}
		for _, x := range gx {
			if !bytes.Equal(wx[x.Name], x.Value) {
				t.Errorf("%s: xattr %s = %q, want %q", name, x.Name, x.Value, wx[x.Name])
			}
			v, err := fsys.GetXattr(name, x.Name)
			if err != nil || !bytes.Equal(v, x.Value) {
				t.Errorf("%s: getxattr %s: %q %v", name, x.Name, v, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checked %d entries", n)
	if _, err := fsys.GetXattr("files/size-1", "user.nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing xattr: %v, want ErrNotExist", err)
	}
	if _, err := fsys.Stat("nope/x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	// symlinks are followed by Stat and Open, not by Lstat
	if fi, err := fsys.Stat("deep/link-rel"); err != nil || fi.Size() != 5000 {
		t.Errorf("stat through symlink: %v %v", fi, err)
	}
	if fi, err := fsys.Stat("deep/link-dir/c/d"); err != nil || !fi.IsDir() {
		t.Errorf("stat through dir symlink: %v %v", fi, err)
	}
	if _, err := fsys.Stat("deep/link-dangling"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("dangling symlink: %v", err)
	}
}

// readAll reads a File with Read in odd-sized pieces.
func readAll(t *testing.T, f io.Reader) []byte {
	var out []byte
	buf := make([]byte, 12345)
	for {
		n, err := f.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadSeek(t *testing.T) {
	src, img := mkfsSource(t)
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	want, _ := os.ReadFile(filepath.Join(src, "files/size-1048576"))
	f, err := fsys.OpenFile("files/size-1048576")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, f); !bytes.Equal(got, want) {
		t.Fatal("Read content differs")
	}
	if pos, err := f.Seek(-100, io.SeekEnd); err != nil || pos != int64(len(want))-100 {
		t.Fatalf("seek end: %d %v", pos, err)
	}
	if got := readAll(t, f); !bytes.Equal(got, want[len(want)-100:]) {
		t.Fatal("tail differs")
	}
	if pos, err := f.Seek(0, gobtrfs.SeekData); err != nil || pos != 0 {
		t.Fatalf("SEEK_DATA 0: %d %v", pos, err)
	}
	if pos, err := f.Seek(0, gobtrfs.SeekHole); err != nil || pos != int64(len(want)) {
		t.Fatalf("SEEK_HOLE 0: %d %v (want EOF %d)", pos, err, len(want))
	}
	if _, err := f.Seek(int64(len(want)), gobtrfs.SeekData); !errors.Is(err, unix.ENXIO) {
		t.Fatalf("SEEK_DATA at EOF: %v, want ENXIO", err)
	}
	// concurrent ReadAt
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			r := rand.New(rand.NewSource(int64(g)))
			buf := make([]byte, 7000)
			for i := 0; i < 200; i++ {
				off := r.Int63n(int64(len(want)))
				n, err := f.ReadAt(buf, off)
				if err != nil && err != io.EOF || !bytes.Equal(buf[:n], want[off:off+int64(n)]) {
					errc <- fmt.Errorf("ReadAt %d: %d %w", off, n, err)
					return
				}
			}
			errc <- nil
		}(g)
	}
	for g := 0; g < 8; g++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	d, err := fsys.OpenFile("many")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for {
		ents, err := d.ReadDir(7)
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(names) != 300 || !sort.StringsAreSorted(names) {
		// mkfs adds entries in readdir order of the source; check count only
		if len(names) != 300 {
			t.Fatalf("ReadDir(7) loop: %d names", len(names))
		}
	}
}

// TestConcurrentReaders walks and reads the whole FS from several goroutines
// at once (run with -race).
func TestConcurrentReaders(t *testing.T) {
	_, img := mkfsSource(t, "-n", "4096")
	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{ExtentCacheBytes: 8 << 10}) // tiny: forces evictions
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	errc := make(chan []error, 4)
	for g := 0; g < 4; g++ {
		go func() { errc <- walkAll(fsys) }()
	}
	for g := 0; g < 4; g++ {
		if errs := <-errc; len(errs) > 0 {
			t.Fatal(errs[0])
		}
	}
	st := fsys.ExtentCacheStats()
	t.Logf("extent cache after 4 concurrent walks: %+v", st)
	if st.Bytes > st.MaxBytes || st.Evictions == 0 {
		t.Fatalf("cache not bounded: %+v", st)
	}
}
