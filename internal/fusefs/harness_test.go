package fusefs

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"golang.org/x/sys/unix"
)

var seedFlag = flag.Int64("seed", 0, "seed for random tests (0: from the clock)")

// needFuse skips unless FUSE mounts can be made here.
func needFuse(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("FUSE unavailable: cannot open /dev/fuse: %v", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			if _, err := exec.LookPath("fusermount"); err != nil {
				t.Skip("FUSE unavailable: not root and no fusermount3")
			}
		}
	}
}

// newImage makes an empty filesystem of size bytes with our mkfs; the
// test ends with checktest.Image of it (after the unmount cleanups of
// mountImage, which run first).
func newImage(t testing.TB, size int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "fs.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := mkfs.Make(dev, mkfs.Config{}); err != nil {
		t.Fatalf("mkfs: %v", err)
	}
	if err := dev.Close(); err != nil {
		t.Fatal(err)
	}
	checktest.AtEnd(t, img)
	return img
}

// testMount is a mount made by a test; t.Cleanup unmounts and closes it.
type testMount struct {
	*Mount
	t      testing.TB
	dir    string
	logBuf *syncBuf
	done   bool
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mountImage mounts img at a new directory.
// cacheModes are the two ways a read-write mount caches data, for tests
// that run in both: the kernel's writeback cache (the default) and every
// write sent to the daemon.
var cacheModes = []struct {
	name string
	o    Options
}{{"writeback_cache", Options{}}, {"no_writeback_cache", Options{NoWritebackCache: true}}}

func mountImage(t testing.TB, img string, o Options) *testMount {
	t.Helper()
	needFuse(t)
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	buf := &syncBuf{}
	if os.Getenv("FUSEFS_TEST_NO_WRITEBACK_CACHE") != "" {
		o.NoWritebackCache = true // run the suite with every write sent to the daemon
	}
	if o.Logger == nil {
		o.Logger = log.New(buf, "", 0)
	}
	mt, err := New(img, dir, o)
	if err != nil {
		t.Fatalf("mount %s: %v", img, err)
	}
	tm := &testMount{Mount: mt, t: t, dir: dir, logBuf: buf}
	t.Cleanup(func() { tm.unmount() })
	return tm
}

// unmount unmounts (waiting out a busy mount briefly) and closes.
func (tm *testMount) unmount() {
	tm.t.Helper()
	if tm.done {
		return
	}
	tm.done = true
	var err error
	for i := 0; i < 50; i++ {
		if err = tm.Unmount(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		// Still busy (a failed test left files open): abort the
		// connection, or Wait would wait for this very process.
		tm.t.Errorf("unmount %s: %v; aborting the FUSE connection", tm.dir, err)
		abortConnection(tm.dir)
		exec.Command("umount", "-l", tm.dir).Run()
	}
	tm.Wait()
	if err := tm.Close(); err != nil {
		tm.t.Errorf("close: %v", err)
	}
}

// abortConnection aborts the FUSE connection mounted at dir (through
// /sys/fs/fuse/connections, which must be mounted).
func abortConnection(dir string) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && f[4] == dir {
			_, minor, _ := strings.Cut(f[2], ":")
			exec.Command("mount", "-t", "fusectl", "none", "/sys/fs/fuse/connections").Run()
			os.WriteFile("/sys/fs/fuse/connections/"+minor+"/abort", []byte("1"), 0)
		}
	}
}

func (tm *testMount) path(rel ...string) string {
	return filepath.Join(append([]string{tm.dir}, rel...)...)
}

// manifest describes a tree as seen through a mount: one line per path.
type manifest map[string]string

// takeManifest walks dir. Inode numbers are compared within the mounted
// subvolume: on a kernel mount the entries with the top's st_dev, on ours
// those below 2^40 (see inomap.go).
func takeManifest(t testing.TB, dir string) manifest {
	t.Helper()
	m := manifest{}
	var top unix.Stat_t
	if err := unix.Lstat(dir, &top); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		line := fmt.Sprintf("mode=%o uid=%d gid=%d", st.Mode, st.Uid, st.Gid)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			line += fmt.Sprintf(" nlink=%d mtime=%d.%09d", st.Nlink, st.Mtim.Sec, st.Mtim.Nsec)
		}
		sameSubvol := st.Dev == top.Dev && (st.Ino < 1<<inoBits || st.Dev != fuseDev(dir, &top))
		if rel != "." && sameSubvol && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			line += fmt.Sprintf(" ino=%d", st.Ino)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" size=%d sha=%x", st.Size, sha256.Sum256(b))
		case unix.S_IFLNK:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			line += " -> " + l
		case unix.S_IFCHR, unix.S_IFBLK:
			line += fmt.Sprintf(" rdev=%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
		}
		line += xattrLine(p)
		m[rel] = line
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return m
}

// fuseDev returns top's st_dev when dir is a FUSE mount, else ^0.
func fuseDev(dir string, top *unix.Stat_t) uint64 {
	var sf unix.Statfs_t
	if unix.Statfs(dir, &sf) == nil && sf.Type == 0x65735546 { // FUSE_SUPER_MAGIC
		return top.Dev
	}
	return ^uint64(0)
}

func xattrLine(p string) string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n == 0 {
		return ""
	}
	names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
	sort.Strings(names)
	var s strings.Builder
	for _, name := range names {
		v := make([]byte, 64<<10)
		k, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			fmt.Fprintf(&s, " xattr %s: %v", name, err)
			continue
		}
		fmt.Fprintf(&s, " xattr %s=%q", name, v[:k])
	}
	return s.String()
}

// diff lists the differences between two manifests.
func (want manifest) diff(got manifest) []string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: missing (want %s)", k, w))
		case g != w:
			out = append(out, fmt.Sprintf("%s:\n   want %s\n    got %s", k, w, g))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("%s: extra (%s)", k, g))
		}
	}
	sort.Strings(out)
	return out
}

// canKernelMount reports whether the kernel can mount a btrfs image here.
func canKernelMount() bool {
	if os.Geteuid() != 0 {
		return false
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return false
	}
	b, _ := os.ReadFile("/proc/filesystems")
	return strings.Contains(string(b), "btrfs")
}

// kernelManifest mounts img read-only with the kernel and takes its manifest.
func kernelManifest(t testing.TB, img string) (manifest, bool) {
	t.Helper()
	if !canKernelMount() {
		t.Logf("not root with loop devices and btrfs: no kernel mount comparison")
		return nil, false
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "btrfs", "-o", "loop,ro", img, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kernel mount %s: %v\n%s", img, err, out)
	}
	defer func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	}()
	return takeManifest(t, dir), true
}

// finish unmounts tm and checks the image: btrfs check clean, and the
// kernel (where it can mount) shows what the FUSE mount showed.
func finish(t testing.TB, tm *testMount, img string) {
	t.Helper()
	fuseView := takeManifest(t, tm.dir)
	tm.unmount()
	if t.Failed() {
		return
	}
	checktest.Image(t, img)
	if kv, ok := kernelManifest(t, img); ok {
		if d := fuseView.diff(kv); len(d) > 0 {
			if len(d) > 30 {
				d = d[:30]
			}
			t.Fatalf("kernel mount differs from the FUSE mount (want = FUSE):\n%s", strings.Join(d, "\n"))
		}
	}
}

// errnoOfErr extracts an errno from an os error.
func errnoOfErr(err error) syscall.Errno {
	for err != nil {
		if e, ok := err.(syscall.Errno); ok {
			return e
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return 0
		}
		err = u.Unwrap()
	}
	return 0
}
