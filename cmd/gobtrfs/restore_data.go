package main

// Restoring one inode: file data (bounded by its extents and a sane
// i_size), symlinks, fifos and device nodes, and metadata set through
// descriptors.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
)

// restoreSizeLimit is the largest i_size restore trusts for an image of
// imageBytes bytes. A sparse file may be larger than the image holding it,
// but not 1024 times larger: past that (and past 8 PiB, 2^53, whatever the
// image) i_size is corruption, such as a stray high bit. A limit of at
// least 1 TiB keeps small images' big sparse files. Data is never copied
// past the last extent, so the limit only decides the restored length.
func restoreSizeLimit(imageBytes int64) int64 {
	const lo, hi = 1 << 40, 1 << 53
	if imageBytes > hi/1024 {
		return hi
	}
	return min(max(imageBytes*1024, lo), hi)
}

// restoreMaxBadChunks is how many chunks in a row may be wholly unreadable
// before restore gives up on the rest of a data run (a destroyed or bogus
// extent): each costs a read per sector.
const restoreMaxBadChunks = 16

// restoreMaxFileErrors bounds the errors reported for one file.
const restoreMaxFileErrors = 20

// restoreFile creates regular file name in h (exclusively: nothing that
// exists, a symlink least of all, is opened) and copies f into it.
func (r *restorer) restoreFile(f rsFile, st *gobtrfs.Stat, h *destDir, name, p string) error {
	perm := uint32(0o600) // private until the final mode is set
	if !r.o.metadata {
		perm = 0o644
	}
	fd, err := createExcl(h.fd, name, perm)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	out := os.NewFile(uintptr(fd), p)
	bad := r.copyData(f, st, out)
	r.metaFD(fd, f, st, p)
	if err := out.Close(); err != nil {
		bad = append(bad, err)
	}
	if len(bad) > restoreMaxFileErrors {
		n := len(bad) - restoreMaxFileErrors
		bad = append(bad[:restoreMaxFileErrors], fmt.Errorf("... and %d more errors in this file", n))
	}
	return errors.Join(bad...)
}

// copyData copies f's data into out run by run (SEEK_DATA/SEEK_HOLE), so
// holes stay holes and copying ends at the last extent whatever i_size
// says. It then sets the length to i_size, or, when i_size is beyond
// r.sizeLimit, to the end of the data and reports the inode as corrupt.
func (r *restorer) copyData(f rsFile, st *gobtrfs.Stat, out *os.File) []error {
	var bad []error
	size := st.Size
	sane := size >= 0 && size <= r.sizeLimit
	if !sane {
		bad = append(bad, diskio.Corruptf("inode %d (subvol %d): i_size %d is beyond the %d bytes restore trusts for this image (1024 times its size, at least 1 TiB, at most 8 PiB): only the data extents are restored",
			st.Ino, st.Subvol, uint64(st.Size), r.sizeLimit))
		size = r.sizeLimit
	}
	var end int64 // end of the last data run copied
	for off := int64(0); off < size; {
		data, err := f.SeekData(off)
		if errors.Is(err, syscall.ENXIO) {
			break
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("map extents at file offset %d: %w (the rest of the file is not restored)", off, err))
			break
		}
		if data >= size {
			break
		}
		hole, err := f.SeekHole(data)
		if err == nil && (data < off || hole <= data) {
			err = diskio.Corruptf("extent map: data at %d ends at %d, looked up from %d", data, hole, off)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("map extents at file offset %d: %w (the rest of the file is not restored)", data, err))
			break
		}
		hole = min(hole, size)
		errs, stop := r.copyRun(f, out, data, hole)
		bad = append(bad, errs...)
		end = hole
		if stop {
			break
		}
		off = hole
	}
	length := st.Size
	if !sane {
		length = end
	}
	if err := out.Truncate(length); err != nil {
		bad = append(bad, fmt.Errorf("set length %d: %w", length, err))
	}
	return bad
}

// copyRun copies the data run [from, to). A stretch of chunks that cannot
// be read at all is one error; after restoreMaxBadChunks such chunks in a
// row the rest of the run is skipped (a destroyed or bogus extent costs a
// read per sector otherwise). stop is set on a write error: the
// destination is failing and the file is abandoned.
func (r *restorer) copyRun(f rsFile, out *os.File, from, to int64) (bad []error, stop bool) {
	lostFrom, lostErr := int64(-1), error(nil) // stretch of wholly unreadable chunks
	flush := func(end int64) {
		if lostFrom >= 0 {
			bad = append(bad, fmt.Errorf("file offsets [%d, %d) unreadable, left as a hole: %w", lostFrom, end, lostErr))
			lostFrom = -1
		}
	}
	for pos := from; pos < to; {
		n := min(int64(len(r.buf)), to-pos)
		lost, rerr, werr := r.copyChunk(f, out, pos, r.buf[:n])
		if werr != nil {
			flush(pos)
			return append(bad, fmt.Errorf("write at offset %d: %w", pos, werr)), true
		}
		whole := lost > 0 && lost == (int(n)+r.sectorSize-1)/r.sectorSize
		switch {
		case whole && lostFrom < 0:
			lostFrom, lostErr = pos, rerr
		case !whole:
			flush(pos)
			if rerr != nil {
				bad = append(bad, fmt.Errorf("%d sector(s) at file offsets [%d, %d) unreadable, left as holes; first: %w", lost, pos, pos+n, rerr))
			}
		}
		pos += n
		if whole && pos-lostFrom >= restoreMaxBadChunks*int64(len(r.buf)) && pos < to {
			flush(pos)
			return append(bad, fmt.Errorf("gave up on the rest of the data run: [%d, %d) not read", pos, to)), false
		}
	}
	flush(to)
	return bad, false
}

// copyChunk copies buf-sized data at pos; on a read error it retries sector
// by sector so that only the damaged sectors are lost: lost counts them,
// readErr is the first read error.
func (r *restorer) copyChunk(f rsFile, out *os.File, pos int64, buf []byte) (lost int, readErr, writeErr error) {
	n, err := f.ReadAt(buf, pos)
	if err == io.EOF {
		err = nil
	}
	if err == nil {
		if _, err := out.WriteAt(buf[:n], pos); err != nil {
			return 0, nil, err
		}
		r.bytes.Add(int64(n))
		return 0, nil, nil
	}
	for i := 0; i < len(buf); i += r.sectorSize {
		piece := buf[i:min(i+r.sectorSize, len(buf))]
		m, err := f.ReadAt(piece, pos+int64(i))
		if err != nil && err != io.EOF {
			if readErr == nil {
				readErr = err
			}
			lost++
			continue
		}
		if _, err := out.WriteAt(piece[:m], pos+int64(i)); err != nil {
			return lost, readErr, err
		}
		r.bytes.Add(int64(m))
	}
	return lost, readErr, nil
}

// restoreSymlink creates symlink name in h; its target is text, never
// followed.
func (r *restorer) restoreSymlink(f rsFile, st *gobtrfs.Stat, h *destDir, name, p string) error {
	target, err := f.ReadLink()
	if err != nil {
		return err
	}
	if err := unix.Symlinkat(target, h.fd, name); err != nil {
		return fmt.Errorf("symlink: %w", err)
	}
	r.metaAt(h.fd, name, f, st, p, true)
	return nil
}

// restoreNode makes a fifo, socket or (with --devices) device node.
func (r *restorer) restoreNode(f rsFile, st *gobtrfs.Stat, h *destDir, name, p string) error {
	typ := st.Mode & unix.S_IFMT
	perm := uint32(0o600)
	if !r.o.metadata {
		perm = 0o644
	}
	dev := 0
	if typ == unix.S_IFCHR || typ == unix.S_IFBLK {
		dev = int(st.Rdev)
	}
	if err := unix.Mknodat(h.fd, name, typ|perm, dev); err != nil {
		return fmt.Errorf("mknod: %w", err)
	}
	r.metaAt(h.fd, name, f, st, p, false)
	return nil
}

// metaFD sets the metadata of a regular file or directory through its
// descriptor, in the order that keeps each: chown first (it clears setuid
// and capabilities), xattrs before a mode that could forbid writing them,
// times last.
func (r *restorer) metaFD(fd int, f rsFile, st *gobtrfs.Stat, p string) {
	if r.o.metadata {
		r.chowned(p, st, unix.Fchown(fd, int(st.UID), int(st.GID)))
	}
	if r.o.xattrs {
		r.setXattrs(f, p, func(n string, v []byte) error { return unix.Fsetxattr(fd, n, v, 0) })
	}
	if !r.o.metadata {
		return
	}
	mode := r.mode(st, p)
	if err := unix.Fchmod(fd, mode); err != nil {
		r.fail(p, fmt.Errorf("chmod %o: %w", mode, err))
	}
	ts := restoreTimes(st)
	if err := futimens(fd, &ts); err != nil {
		r.fail(p, fmt.Errorf("utimensat: %w", err))
	}
}

// metaAt sets the metadata of a symlink, fifo, socket or device node by
// name in dirfd, never following a symlink.
func (r *restorer) metaAt(dirfd int, name string, f rsFile, st *gobtrfs.Stat, p string, isLink bool) {
	if r.o.metadata {
		r.chowned(p, st, unix.Fchownat(dirfd, name, int(st.UID), int(st.GID), unix.AT_SYMLINK_NOFOLLOW))
	}
	if r.o.xattrs {
		at := procPath(dirfd, name)
		r.setXattrs(f, p, func(n string, v []byte) error { return unix.Lsetxattr(at, n, v, 0) })
	}
	if !r.o.metadata {
		return
	}
	if !isLink {
		mode := r.mode(st, p)
		if err := chmodNoFollow(dirfd, name, mode); err != nil {
			r.fail(p, fmt.Errorf("chmod %o: %w", mode, err))
		}
	}
	ts := restoreTimes(st)
	if err := unix.UtimesNanoAt(dirfd, name, ts[:], unix.AT_SYMLINK_NOFOLLOW); err != nil {
		r.fail(p, fmt.Errorf("utimensat: %w", err))
	}
}

// chowned handles the result of a chown: without root, ownership cannot be
// restored, which is said once.
func (r *restorer) chowned(p string, st *gobtrfs.Stat, err error) {
	switch {
	case err == nil:
	case r.root:
		r.fail(p, fmt.Errorf("chown %d:%d: %w", st.UID, st.GID, err))
	case !r.notRootWarn:
		r.notRootWarn = true
		r.warnings = append([]string{"not root: file ownership not restored"}, r.warnings...)
	}
}

// mode is the mode to restore: setuid and setgid bits of non-directories
// only with --keep-setuid (a setgid directory only passes its group on).
func (r *restorer) mode(st *gobtrfs.Stat, p string) uint32 {
	m := st.Mode & 0o7777
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && m&(unix.S_ISUID|unix.S_ISGID) != 0 && !r.o.keepSetuid {
		m &^= unix.S_ISUID | unix.S_ISGID
		r.stats.setuid++
		if r.o.verbose {
			r.notef("%s: setuid/setgid bits dropped (--keep-setuid keeps them)", p)
		}
	}
	return m
}

// setXattrs restores f's xattrs with set; security.capability (privileges
// granted on exec, like setuid) only with --keep-setuid.
func (r *restorer) setXattrs(f rsFile, p string, set func(name string, value []byte) error) {
	xs, err := f.Xattrs()
	if err != nil {
		r.fail(p, err)
	}
	for _, x := range xs {
		if x.Name == "security.capability" && !r.o.keepSetuid {
			r.stats.caps++
			if r.o.verbose {
				r.notef("%s: file capabilities dropped (--keep-setuid keeps them)", p)
			}
			continue
		}
		if err := set(x.Name, x.Value); err != nil {
			if rdBestEffortXattr(x.Name, err) {
				r.warnf("%s: xattr %s not restored: %v", p, x.Name, err)
			} else {
				r.fail(p, fmt.Errorf("setxattr %s: %w", x.Name, err))
			}
		}
	}
}

// restoreTimes is (atime, mtime) of st, nanoseconds kept.
func restoreTimes(st *gobtrfs.Stat) [2]unix.Timespec {
	ts := func(t time.Time) unix.Timespec { return unix.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())} }
	return [2]unix.Timespec{ts(st.Atime), ts(st.Mtime)}
}

// rdBestEffortXattr reports xattrs whose namespace the destination may not
// support or allow (security labels, trusted.* without CAP_SYS_ADMIN, btrfs
// properties on another filesystem): a warning rather than a failure.
func rdBestEffortXattr(name string, err error) bool {
	switch {
	case strings.HasPrefix(name, "security."), strings.HasPrefix(name, "trusted."), strings.HasPrefix(name, "btrfs."):
		return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) ||
			errors.Is(err, unix.EINVAL)
	}
	return false
}
