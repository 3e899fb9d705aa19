// Package testimg builds btrfs test images and compares directory trees:
// a source tree with every kind of inode, mkfs.btrfs --rootdir images of it,
// kernel-made images (scripts/mkimages.sh, root + loop), and a tree
// comparison that checks content, mode, ownership, times, xattrs, device
// numbers and hard link structure.
package testimg

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FileSizes are the regular file sizes every source tree has.
var FileSizes = []int{0, 1, 3000, 4096, 5000, 1 << 20}

// SourceOptions choose what BuildSource makes.
type SourceOptions struct {
	Seed int64
	// ManyFiles is the size of a directory of small files (spanning leaves).
	ManyFiles int
}

// BuildSource creates a source tree under dir with regular files of many
// sizes, a sparse file, nested directories, symlinks, hard links, a fifo,
// device nodes (root only), user.* xattrs, odd nanosecond mtimes and special
// mode bits. It returns notes on what was skipped.
func BuildSource(t testing.TB, dir string, o SourceOptions) []string {
	t.Helper()
	r := rand.New(rand.NewSource(o.Seed))
	var notes []string
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mk := func(rel string, data []byte, perm os.FileMode) string {
		p := filepath.Join(dir, rel)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, data, perm))
		must(os.Chmod(p, perm))
		return p
	}
	random := func(n int) []byte {
		b := make([]byte, n)
		r.Read(b)
		return b
	}
	for _, n := range FileSizes {
		mk(fmt.Sprintf("files/size-%d", n), random(n), 0o644)
		mk(fmt.Sprintf("files/text-%d", n), []byte(strings.Repeat("btrfs text ", n/11+1)[:n]), 0o640)
	}
	// sparse: data, hole, data, hole to EOF
	sp := mk("files/sparse", nil, 0o644)
	f, err := os.OpenFile(sp, os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteAt(random(8192), 0)
	must(err)
	_, err = f.WriteAt(random(5000), 3<<20)
	must(err)
	must(f.Truncate(8 << 20))
	must(f.Close())

	// modes
	mk("modes/setuid", []byte("#!/bin/sh\n"), 0o4755)
	mk("modes/setgid", []byte("x"), 0o2711)
	mk("modes/none", []byte("secret"), 0)
	must(os.MkdirAll(filepath.Join(dir, "modes/sticky"), 0o755))
	must(os.Chmod(filepath.Join(dir, "modes/sticky"), 0o1777|os.ModeSticky))
	must(unix.Chmod(filepath.Join(dir, "modes/sticky"), 0o1777))
	must(os.MkdirAll(filepath.Join(dir, "modes/sgiddir"), 0o755))
	must(unix.Chmod(filepath.Join(dir, "modes/sgiddir"), 0o2775))
	must(unix.Chmod(filepath.Join(dir, "modes/setuid"), 0o4755))
	must(unix.Chmod(filepath.Join(dir, "modes/setgid"), 0o2711))

	// nested dirs, odd names
	mk("deep/a/b/c/d/e/leaf", []byte("leaf"), 0o600)
	mk("names/with space", []byte("1"), 0o644)
	mk("names/ünïcødé", []byte("2"), 0o644)
	mk("names/"+strings.Repeat("L", 255), []byte("3"), 0o644)
	for i := 0; i < o.ManyFiles; i++ {
		mk(fmt.Sprintf("many/file-%05d", i), random(r.Intn(200)), 0o644)
	}

	// symlinks
	must(os.Symlink("../files/size-5000", filepath.Join(dir, "deep/link-rel")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "deep/link-abs")))
	must(os.Symlink("nowhere", filepath.Join(dir, "deep/link-dangling")))
	must(os.Symlink("a/b", filepath.Join(dir, "deep/link-dir")))
	must(os.Symlink(strings.Repeat("x/", 1000)+"y", filepath.Join(dir, "deep/link-long")))

	// hard links: same dir and another dir
	must(os.Link(filepath.Join(dir, "files/size-3000"), filepath.Join(dir, "files/hard-3000")))
	must(os.Link(filepath.Join(dir, "files/size-3000"), filepath.Join(dir, "deep/hard-3000")))
	must(os.Link(filepath.Join(dir, "files/size-1048576"), filepath.Join(dir, "names/hard-1m")))

	// fifo and devices
	must(os.MkdirAll(filepath.Join(dir, "special"), 0o755))
	must(unix.Mkfifo(filepath.Join(dir, "special/fifo"), 0o640))
	if os.Geteuid() == 0 {
		must(unix.Mknod(filepath.Join(dir, "special/null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		must(unix.Mknod(filepath.Join(dir, "special/blk"), unix.S_IFBLK|0o600, int(unix.Mkdev(259, 70000))))
	} else {
		notes = append(notes, "not root: no device nodes")
	}

	// xattrs
	setx := func(rel, name string, val []byte) {
		if err := unix.Lsetxattr(filepath.Join(dir, rel), name, val, 0); err != nil {
			t.Fatalf("setxattr %s %s: %v", rel, name, err)
		}
	}
	setx("files/size-1", "user.one", []byte("1"))
	setx("files/size-1", "user.two", []byte{})
	setx("files/size-4096", "user.big", random(2000))
	setx("deep", "user.dir", []byte("on a directory"))
	setx("files/hard-3000", "user.hard", []byte("shared by links"))

	// ownership (root only) and times, deepest first so dir times stick
	if os.Geteuid() == 0 {
		must(os.Lchown(filepath.Join(dir, "files/size-5000"), 1234, 5678))
		must(os.Lchown(filepath.Join(dir, "deep/link-rel"), 42, 43))
		must(os.Lchown(filepath.Join(dir, "deep/a"), 1000, 1000))
	} else {
		notes = append(notes, "not root: no chown")
	}
	setTimes(t, dir, r)
	return notes
}

// setTimes gives every entry an odd mtime with nanoseconds, children before parents.
func setTimes(t testing.TB, dir string, r *rand.Rand) {
	var paths []string
	filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	for i := len(paths) - 1; i >= 0; i-- {
		sec := int64(946684800) + r.Int63n(30*365*86400)
		ts := []unix.Timespec{
			unix.NsecToTimespec(time.Unix(sec-r.Int63n(1e6), r.Int63n(1e9)).UnixNano()),
			unix.NsecToTimespec(time.Unix(sec, r.Int63n(1e9)).UnixNano()),
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, paths[i], ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("utimensat %s: %v", paths[i], err)
		}
	}
}
