package fusefs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// whiteoutReport renames with RENAME_WHITEOUT (onto a new name, over an
// existing file, in a set-group-ID directory, with EXCHANGE) and describes
// what is left under both names.
func whiteoutReport(t *testing.T, dir string) string {
	var b strings.Builder
	desc := func(p string) string {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return errName(err)
		}
		return fmt.Sprintf("mode %#o rdev %d:%d owner %d:%d nlink %d size %d", st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), st.Uid, st.Gid, st.Nlink, st.Size)
	}
	sgid := filepath.Join(dir, "sgid")
	os.Mkdir(sgid, 0o755)
	os.Chown(sgid, 0, 1000)
	os.Chmod(sgid, 0o2775)
	for _, c := range []struct {
		name, dir, src, dst string
		mkdst               bool
		flags               uint
	}{
		{"new name", dir, "a", "b", false, unix.RENAME_WHITEOUT},
		{"over a file", dir, "c", "d", true, unix.RENAME_WHITEOUT},
		{"noreplace over a file", dir, "e", "f", true, unix.RENAME_WHITEOUT | unix.RENAME_NOREPLACE},
		{"noreplace", dir, "g", "h", false, unix.RENAME_WHITEOUT | unix.RENAME_NOREPLACE},
		{"exchange", dir, "i", "j", true, unix.RENAME_WHITEOUT | unix.RENAME_EXCHANGE},
		{"set-group-ID directory", sgid, "k", "l", false, unix.RENAME_WHITEOUT},
	} {
		src, dst := filepath.Join(c.dir, c.src), filepath.Join(c.dir, c.dst)
		os.WriteFile(src, []byte("source"), 0o640)
		if c.mkdst {
			os.WriteFile(dst, []byte("target"), 0o644)
		}
		err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, c.flags)
		fmt.Fprintf(&b, "%s: %s; source: %s; target: %s\n", c.name, errName(err), desc(src), desc(dst))
	}
	// a directory moved with a whiteout left behind
	os.Mkdir(filepath.Join(dir, "m"), 0o700)
	err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, "m"), unix.AT_FDCWD, filepath.Join(dir, "n"), unix.RENAME_WHITEOUT)
	fmt.Fprintf(&b, "directory: %s; source: %s; target: %s\n", errName(err), desc(filepath.Join(dir, "m")), desc(filepath.Join(dir, "n")))
	names, _ := os.ReadDir(dir)
	for _, e := range names {
		fmt.Fprintf(&b, "%s ", e.Name())
	}
	b.WriteString("\n")
	return b.String()
}

// TestWhiteoutLikeKernel: generic/078. RENAME_WHITEOUT leaves a character
// device 0:0 of mode 0 under the source name, as on kernel btrfs.
func TestWhiteoutLikeKernel(t *testing.T) {
	sideBySide(t, "", Options{}, whiteoutReport)
}

// btimeReport: statx's birth time is given, is the creation time, and
// stays when the file changes.
func btimeReport(t *testing.T, dir string) string {
	var b strings.Builder
	p := filepath.Join(dir, "f")
	start := time.Now().Add(-time.Second)
	os.WriteFile(p, []byte("x"), 0o644)
	sx := func() unix.Statx_t {
		var s unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, p, 0, unix.STATX_ALL, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	first := sx()
	bt := time.Unix(first.Btime.Sec, int64(first.Btime.Nsec))
	// (not compared with mtime: in the writeback cache mode the kernel
	// stamps mtime with its coarse clock, which may lag the daemon's)
	fmt.Fprintf(&b, "btime in mask %v, after the test began %v, before now %v\n", first.Mask&unix.STATX_BTIME != 0,
		bt.After(start), bt.Before(time.Now()))
	tick()
	os.WriteFile(p, []byte("changed"), 0o644)
	second := sx()
	fmt.Fprintf(&b, "after a write: btime kept %v, mtime moved %v\n", second.Btime == first.Btime, second.Mtime != first.Mtime)
	// statx's attribute bits do not pass FUSE (fuse_do_statx copies the
	// mask and btime only); FS_IOC_GETFLAGS shows the flags instead
	f, _ := os.Open(p)
	err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, 0x20|0x40) // append, nodump
	fl, gerr := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	fmt.Fprintf(&b, "chattr +ad: %s, flags %#x %s\n", errName(err), fl, errName(gerr))
	unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, 0)
	f.Close()
	return b.String()
}

// TestBtimeLikeKernel: generic/528. statx(STATX_BTIME) gives the btrfs
// otime through FUSE_STATX.
func TestBtimeLikeKernel(t *testing.T) {
	sideBySide(t, "", Options{}, btimeReport)
}
