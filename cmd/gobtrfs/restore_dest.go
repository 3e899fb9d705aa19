package main

// Restore's destination. An image is untrusted input: its names and types
// decide what restore creates, so restore never resolves a path it built
// from them. Every entry is made relative to an open directory descriptor,
// one name at a time, with *at system calls that do not follow a final
// symlink (O_CREAT|O_EXCL|O_NOFOLLOW, mkdirat, symlinkat, mknodat, linkat
// without AT_SYMLINK_FOLLOW); directories are opened with openat2
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or component by component with
// O_NOFOLLOW|O_DIRECTORY where the kernel has no openat2; attributes are
// set on descriptors (fchown, fsetxattr, fchmod, futimens) or with
// AT_SYMLINK_NOFOLLOW. Only DESTDIR itself is opened as the user wrote it.

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// destDir is a directory of the destination being filled.
type destDir struct {
	fd   int    // O_RDONLY|O_DIRECTORY; -1 in a dry run for a directory not on disk
	rel  string // path below DESTDIR, "." for DESTDIR
	path string // DESTDIR/rel, for messages (names quoted: child)
}

// child names entry name of d: rel for the *at calls, path for messages
// and listings, with name quoted as ls quotes it (a name from the image
// may hold escape sequences or newlines, which must not reach a terminal
// raw).
func (d *destDir) child(name string) (rel, path string) {
	if d.rel == "." {
		return name, strings.TrimSuffix(d.path, "/") + "/" + quoteName(name)
	}
	return d.rel + "/" + name, d.path + "/" + quoteName(name)
}

// destOpener opens directories below DESTDIR without following symlinks.
type destOpener struct {
	// fallback: no openat2 (ENOSYS, or forced by tests); walk component by
	// component with openat O_NOFOLLOW|O_DIRECTORY.
	fallback bool
}

const dirOpenFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens directory rel (slash-separated, relative, no "." or ".."
// components) below dirfd, following no symlink on the way.
func (o *destOpener) openDir(dirfd int, rel string) (int, error) {
	if rel == "." {
		return unix.Openat(dirfd, ".", dirOpenFlags, 0)
	}
	if !o.fallback {
		how := &unix.OpenHow{Flags: dirOpenFlags,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for tries := 0; ; tries++ {
			fd, err := unix.Openat2(dirfd, rel, how)
			if errors.Is(err, unix.EAGAIN) && tries < 16 {
				continue // a rename raced with the lookup
			}
			if !errors.Is(err, unix.ENOSYS) {
				return fd, err
			}
			o.fallback = true
			break
		}
	}
	cur := dirfd
	for _, c := range strings.Split(rel, "/") {
		if !rdSafeName(c) {
			if cur != dirfd {
				unix.Close(cur)
			}
			return -1, fmt.Errorf("path %q: component %q: %w", rel, c, unix.EINVAL)
		}
		fd, err := unix.Openat(cur, c, dirOpenFlags, 0)
		if cur != dirfd {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

// lstatAt stats name in dirfd without following a symlink; ok is false
// when nothing has that name.
func lstatAt(dirfd int, name string) (st unix.Stat_t, ok bool, err error) {
	err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return st, false, nil
	}
	return st, err == nil, err
}

// createExcl creates regular file name in dirfd; it fails if anything,
// a symlink included, already has that name.
func createExcl(dirfd int, name string, perm uint32) (int, error) {
	return unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
}

// futimens sets the times of the open file fd (utimensat(fd, NULL, ts, 0):
// x/sys/unix has no wrapper that passes a NULL path).
func futimens(fd int, ts *[2]unix.Timespec) error {
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(fd), 0, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// procPath names entry name of the open directory dirfd through /proc, for
// the l*xattr calls that have no *at form: /proc/self/fd/N resolves to the
// directory itself, and the l-variant does not follow name.
func procPath(dirfd int, name string) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, name)
}

// chmodNoFollow changes the mode of name in dirfd, which is not a symlink,
// without following one should it have become one: fchmodat2
// AT_SYMLINK_NOFOLLOW, or on older kernels an O_PATH descriptor changed
// through /proc.
func chmodNoFollow(dirfd int, name string, mode uint32) error {
	err := unix.Fchmodat(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW)
	if !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fmt.Errorf("%s became a symlink: %w", name, unix.ELOOP)
	}
	return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), mode)
}
