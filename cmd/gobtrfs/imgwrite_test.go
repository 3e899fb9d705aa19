package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// wtMkfsBtrfs makes an empty 512 MiB image with mkfs.btrfs; the test ends
// with checktest.Image of it.
func wtMkfsBtrfs(t *testing.T, args ...string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	checktest.Mkfs(t, img, 512<<20, args...)
	return img
}

// runW runs a write subcommand and checks the image afterwards.
func runW(t *testing.T, img string, main func([]string, io.Writer) error, args ...string) {
	t.Helper()
	var stderr bytes.Buffer
	if err := main(args, &stderr); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	checktest.Image(t, img)
}

// wtMakeSource builds a host tree with every kind of file put must copy.
func wtMakeSource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src")
	mk := func(p string, data []byte, mode os.FileMode) string {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, mode); err != nil {
			t.Fatal(err)
		}
		return full
	}
	mk("small", []byte("hello\n"), 0o640)
	mk("empty", nil, 0o600)
	big := make([]byte, 300000)
	for i := range big {
		big[i] = byte(i * 7 / 13)
	}
	mk("dir/big", big, 0o644)
	mk("dir/deeper/x", bytes.Repeat([]byte("xyz"), 5000), 0o755)
	sparse := mk("sparse", nil, 0o644)
	sf, err := os.OpenFile(sparse, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	sf.WriteAt([]byte("data in the middle"), 5<<20)
	sf.WriteAt([]byte("and at the start"), 0)
	sf.Truncate(12 << 20)
	sf.Close()
	if err := os.Link(filepath.Join(src, "small"), filepath.Join(src, "dir/hardlink")); err != nil {
		t.Fatal(err)
	}
	os.Symlink("../small", filepath.Join(src, "dir/symlink"))
	unix.Mkfifo(filepath.Join(src, "fifo"), 0o620)
	if os.Geteuid() == 0 {
		unix.Mknod(filepath.Join(src, "chardev"), unix.S_IFCHR|0o600, int(unix.Mkdev(4, 65)))
		os.Lchown(filepath.Join(src, "dir/big"), 1234, 5678)
		os.Lchown(filepath.Join(src, "dir/symlink"), 42, 43)
	}
	unix.Setxattr(filepath.Join(src, "small"), "user.greeting", []byte("hi there"), 0)
	unix.Setxattr(filepath.Join(src, "dir"), "user.d", []byte{0, 1, 2}, 0)
	when := time.Unix(1500000000, 123456789)
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			ts := []unix.Timespec{unix.NsecToTimespec(when.UnixNano()), unix.NsecToTimespec(when.Add(time.Hour).UnixNano())}
			unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
			when = when.Add(time.Minute + 17)
		}
		return nil
	})
	return src
}

// wtDescribeHostTree lists a host tree: path -> type, mode, owner, links,
// mtime, content hash or target, xattrs.
func wtDescribeHostTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var body string
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			body = fmt.Sprintf("%x", sha256.Sum256(data))
		case unix.S_IFLNK:
			body, _ = os.Readlink(p)
		case unix.S_IFCHR, unix.S_IFBLK:
			body = fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
		mtime := time.Unix(st.Mtim.Unix())
		if st.Mode&unix.S_IFMT == unix.S_IFDIR && rel == "." {
			mtime = time.Time{}
		}
		out[rel] = fmt.Sprintf("%o %d:%d n%d %s %s %s", st.Mode, st.Uid, st.Gid, wtNlinkOf(&st), mtime.UTC().Format(time.RFC3339Nano),
			body, wtHostXattrs(p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func wtNlinkOf(st *unix.Stat_t) uint64 {
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return 1 // btrfs counts 1 for directories
	}
	return uint64(st.Nlink)
}

func wtHostXattrs(p string) string {
	sz, _ := unix.Llistxattr(p, nil)
	if sz <= 0 {
		return "[]"
	}
	buf := make([]byte, sz)
	sz, _ = unix.Llistxattr(p, buf)
	var xs []string
	for _, n := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
		v := make([]byte, 65536)
		vn, err := unix.Lgetxattr(p, n, v)
		if err == nil {
			xs = append(xs, fmt.Sprintf("%s=%x", n, v[:vn]))
		}
	}
	sort.Strings(xs)
	return "[" + strings.Join(xs, " ") + "]"
}

// wtDescribeImageTree lists the image subtree at dir through the public
// read-only package, in wtDescribeHostTree's form.
func wtDescribeImageTree(t *testing.T, img, dir string) map[string]string {
	t.Helper()
	f, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	var walk func(p, rel string)
	walk = func(p, rel string) {
		fi, err := f.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*gobtrfs.Stat)
		var body string
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := f.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			body = fmt.Sprintf("%x", sha256.Sum256(data))
		case unix.S_IFLNK:
			body, _ = f.ReadLink(p)
		case unix.S_IFCHR, unix.S_IFBLK:
			body = fmt.Sprintf("%d:%d", st.Major(), st.Minor())
		}
		xs, err := f.Xattrs(p)
		if err != nil {
			t.Fatal(err)
		}
		var xl []string
		for _, x := range xs {
			xl = append(xl, fmt.Sprintf("%s=%x", x.Name, x.Value))
		}
		mtime := st.Mtime
		if rel == "." {
			mtime = time.Time{}
		}
		out[rel] = fmt.Sprintf("%o %d:%d n%d %s %s [%s]", st.Mode, st.UID, st.GID, st.Nlink,
			mtime.UTC().Format(time.RFC3339Nano), body, strings.Join(xl, " "))
		if fi.IsDir() {
			ents, err := f.ReadDir(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				walk(p+"/"+e.Name(), filepath.Join(rel, e.Name()))
			}
		}
	}
	walk(strings.TrimPrefix(dir, "/"), ".")
	return out
}

func wtCompareTrees(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	if diffs := testutil.DiffMaps(want, got); len(diffs) > 0 {
		t.Fatalf("%s differs:\n%s", what, strings.Join(diffs, "\n"))
	}
}

func TestWriteCommands(t *testing.T) {
	for _, args := range [][]string{nil, {"--nodesize", "4096", "--csum", "xxhash", "-O", "^no-holes"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			img := wtMkfsBtrfs(t, args...)
			src := wtMakeSource(t)
			runW(t, img, putMain, img, src, "/")
			wtCompareTrees(t, "put tree", wtDescribeHostTree(t, src), wtDescribeImageTree(t, img, "src"))
			// put into a new name, with compression
			runW(t, img, putMain, "-z", "zstd", img, filepath.Join(src, "dir"), "/copy")
			want := wtDescribeHostTree(t, filepath.Join(src, "dir"))
			want["hardlink"] = strings.Replace(want["hardlink"], " n2 ", " n1 ", 1) // its other name stayed behind
			wtCompareTrees(t, "put -z", want, wtDescribeImageTree(t, img, "copy"))

			runW(t, img, mkdirMain, "-p", img, "/a/b/c")
			runW(t, img, mkdirMain, img, "/a/b/c/d")
			runW(t, img, lnMain, "-s", img, "../../src/small", "/a/b/sym")
			runW(t, img, lnMain, img, "/src/small", "/a/b/hard")
			runW(t, img, mvMain, img, "/a/b/c", "/a/moved")
			runW(t, img, mvMain, img, "/src/empty", "/a") // into a directory
			runW(t, img, wtSubvolumeMain2, "create", img, "/a/sv")
			runW(t, img, putMain, img, filepath.Join(src, "small"), "/a/sv/small")
			runW(t, img, wtSubvolumeMain2, "snapshot", "-r", img, "/a/sv", "/snap")
			runW(t, img, rmMain, "-r", img, "/copy", "/a/moved")
			runW(t, img, rmMain, img, "/a/b/hard")

			f, err := gobtrfs.Open(img, &gobtrfs.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range []string{".", "a", "a/b", "a/sv", "snap"} {
				ents, err := f.ReadDir(d)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range ents {
					names = append(names, d+"/"+e.Name())
				}
			}
			if l, _ := f.ReadLink("a/b/sym"); l != "../../src/small" {
				t.Fatalf("symlink target %q", l)
			}
			if data, _ := f.ReadFile("snap/small"); string(data) != "hello\n" {
				t.Fatalf("snapshot content %q", data)
			}
			fi, err := f.Stat("src/sparse")
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*gobtrfs.Stat); st.NBytes > 1<<20 || st.Size != 12<<20 {
				t.Fatalf("sparse file: size %d nbytes %d (holes not kept)", st.Size, st.NBytes)
			}
			fi, _ = f.Stat("src/small")
			if n := fi.Sys().(*gobtrfs.Stat).Nlink; n != 2 {
				t.Fatalf("src/small nlink %d, want 2", n)
			}
			f.Close()
			wantNames := "./a ./snap ./src a/b a/empty a/sv a/b/sym a/sv/small snap/small"
			if got := strings.Join(names, " "); got != wantNames {
				t.Fatalf("names:\n got %s\nwant %s", got, wantNames)
			}

			var out bytes.Buffer
			if err := subvolumeMain([]string{"list", img}, &out, io.Discard); err != nil {
				t.Fatal(err)
			}
			if !regexp.MustCompile(`ID 256 gen \d+ top level 5 path a/sv\nID 257 gen \d+ top level 5 path snap\n`).Match(out.Bytes()) {
				t.Fatalf("subvolume list:\n%s", out.String())
			}
			runW(t, img, wtSubvolumeMain2, "delete", img, "/snap")

			// errors name the path
			for _, c := range []struct {
				main func([]string, io.Writer) error
				args []string
				want string
			}{
				{rmMain, []string{img, "/nope/x"}, "/nope: no such file or directory"},
				{rmMain, []string{img, "/a"}, "/a: is a directory"},
				{mkdirMain, []string{img, "/a"}, "/a: file exists"},
				{mvMain, []string{img, "/a/sv/small", "/x"}, "/x: invalid cross-device link"},
				{lnMain, []string{img, "/missing", "/y"}, "/missing: no such file or directory"},
				{putMain, []string{img, src, "/src/small/z"}, "/src/small/z: not a directory"},
			} {
				err := c.main(c.args, io.Discard)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%v: error %v, want %q", c.args, err, c.want)
				}
			}
			checktest.Image(t, img)
		})
	}
}

// wtSubvolumeMain2 adapts subvolumeMain to run's signature.
func wtSubvolumeMain2(args []string, stderr io.Writer) error {
	return subvolumeMain(args, io.Discard, stderr)
}

var _ = syscall.ENOENT
