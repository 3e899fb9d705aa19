package fusefs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gobtrfs/gobtrfs"
	"golang.org/x/sys/unix"
)

// remountDir remounts dir with opts: mount(8) on a kernel mount, Remount
// (what mount.fuse.gobtrfs runs for -o remount) on ours.
func remountDir(dir, opts string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err
	}
	if st.Type == fuseSuperMagic {
		return Remount(dir, opts)
	}
	flags := uintptr(unix.MS_REMOUNT)
	if opts == "ro" {
		flags |= unix.MS_RDONLY
	}
	return unix.Mount("", dir, "", flags, "")
}

// errName is the errno of err, or "ok".
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var e syscall.Errno
	for u := err; u != nil; {
		if x, ok := u.(syscall.Errno); ok {
			e = x
			break
		}
		w, ok := u.(interface{ Unwrap() error })
		if !ok {
			return "error " + err.Error()
		}
		u = w.Unwrap()
	}
	return unix.ErrnoName(e)
}

// remountReport writes, remounts read-only, tries every kind of change,
// reads, and remounts read-write again.
func remountReport(t *testing.T, dir string) string {
	var b strings.Builder
	p := func(f string) string { return filepath.Join(dir, f) }
	if err := os.WriteFile(p("f"), []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(p("d"), 0o755)
	w, err := os.OpenFile(p("open"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "remount ro with a file open for writing: %s\n", errName(remountDir(dir, "ro")))
	w.Close()
	fmt.Fprintf(&b, "remount ro: %v\n", remountDir(dir, "ro"))
	var sf unix.Statfs_t
	unix.Statfs(dir, &sf)
	fmt.Fprintf(&b, "statfs ST_RDONLY: %v\n", sf.Flags&unix.ST_RDONLY != 0)
	try := func(name string, fn func() error) { fmt.Fprintf(&b, "%s: %s\n", name, errName(fn())) }
	try("create", func() error { return os.WriteFile(p("new"), nil, 0o644) })
	try("open for writing", func() error {
		f, err := os.OpenFile(p("f"), os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return err
	})
	try("mkdir", func() error { return os.Mkdir(p("d2"), 0o755) })
	try("rmdir", func() error { return os.Remove(p("d")) })
	try("unlink", func() error { return os.Remove(p("f")) })
	try("rename", func() error { return os.Rename(p("f"), p("g")) })
	try("chmod", func() error { return os.Chmod(p("f"), 0o600) })
	try("utimes", func() error { return os.Chtimes(p("f"), time.Now(), time.Now()) })
	try("setxattr", func() error { return unix.Setxattr(p("f"), "user.x", []byte("1"), 0) })
	try("symlink", func() error { return os.Symlink("f", p("l")) })
	try("mknod", func() error { return unix.Mknod(p("fifo"), unix.S_IFIFO|0o644, 0) })
	before := stamp(t, p("f"))
	tick()
	data, err := os.ReadFile(p("f"))
	fmt.Fprintf(&b, "read: %q %s, atime %s\n", data, errName(err), changed(before.Atim, stamp(t, p("f")).Atim))
	fmt.Fprintf(&b, "remount rw: %v\n", remountDir(dir, "rw"))
	unix.Statfs(dir, &sf)
	fmt.Fprintf(&b, "statfs ST_RDONLY: %v\n", sf.Flags&unix.ST_RDONLY != 0)
	try("create", func() error { return os.WriteFile(p("new"), []byte("after"), 0o644) })
	try("rename", func() error { return os.Rename(p("f"), p("g")) })
	data, err = os.ReadFile(p("new"))
	fmt.Fprintf(&b, "read: %q %s\n", data, errName(err))
	return b.String()
}

// TestRemountLikeKernel: generic/294, 306. mount -o remount,ro and
// remount,rw change a live mount as on kernel btrfs; read-only means no
// change of any kind, atimes included.
func TestRemountLikeKernel(t *testing.T) {
	sideBySide(t, "strictatime", Options{Atime: AtimeStrict}, remountReport)
}

// TestRemountCommits: remount,ro writes back what is buffered and commits
// before it returns: the image then has it, as another reader sees.
func TestRemountCommits(t *testing.T) {
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	if err := os.WriteFile(tm.path("f"), []byte("buffered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Remount(tm.dir, "ro,noatime"); err != nil {
		t.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{NoInUseWarning: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	if data, err := fsys.ReadFile("f"); err != nil || string(data) != "buffered" {
		t.Errorf("image after remount,ro: %q, %v", data, err)
	}
	if mode, _ := tm.m.atimeRule(); mode != AtimeNever {
		t.Errorf("atime rule after remount,noatime: %v", mode)
	}
	ro := mountImage(t, newImage(t, 256<<20), Options{ReadOnly: true})
	if err := Remount(ro.dir, "rw"); err == nil || !strings.Contains(err.Error(), "mounted with -o ro") {
		t.Errorf("remount,rw of a -o ro mount: %v", err)
	}
}

// TestRemountIoctlNeedsRoot: another user cannot freeze the mount through
// the daemon's remount ioctl.
func TestRemountIoctlNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	tm := mountImage(t, newImage(t, 256<<20), Options{AllowOther: true})
	d, err := os.Open(tm.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	errc := make(chan error)
	go func() {
		// setfsuid is per thread: this thread asks as nobody
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		unix.Setfsgid(65534)
		unix.Setfsuid(65534)
		arg := uint64(remountRO)
		_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, d.Fd(), gobtrfsIocRemount, uintptr(unsafe.Pointer(&arg)))
		errc <- errno
	}()
	if err := <-errc; !errors.Is(err, syscall.EPERM) {
		t.Errorf("remount ioctl as nobody: %v", err)
	}
	if err := os.WriteFile(tm.path("f"), nil, 0o644); err != nil {
		t.Errorf("write after nobody's remount ioctl: %v", err)
	}
}
