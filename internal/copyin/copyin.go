// Package copyin copies host files and directory trees into a btrfs
// filesystem open for writing: what `gobtrfs put` and `mkfs --rootdir` do.
package copyin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// chunk is how much file data one write carries.
const chunk = 8 << 20

// pathErr names the image path in an error, keeping the errno readable:
// "/a/b: no such file or directory".
func pathErr(p string, err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return fmt.Errorf("%s: %w", p, en)
	}
	return fmt.Errorf("%s: %w", p, err)
}

func isDirMode(mode uint32) bool { return mode&syscall.S_IFMT == syscall.S_IFDIR }

// Copier copies host trees into a filesystem open for writing, keeping
// mode, owner, nanosecond times, xattrs, hard links (within one Copier),
// symlinks, fifos, sockets, device nodes and holes.
type Copier struct {
	fs    *fsops.FS
	links map[[2]uint64]ondisk.InodeRef // host (dev, ino) -> image inode
	// Progress, when set, is told of each entry copied and of the bytes
	// of file data written (a progress bar: *progress.Bar).
	Progress Progress
}

// Progress counts what a Copier has copied.
type Progress interface {
	Add(files, bytes int64)
	Current(path string)
}

func (c *Copier) count(files, bytes int64, ipath string) {
	if c.Progress == nil {
		return
	}
	if ipath != "" {
		c.Progress.Current(ipath)
	}
	c.Progress.Add(files, bytes)
}

// New returns a Copier writing into fs.
func New(fs *fsops.FS) *Copier {
	return &Copier{fs: fs, links: map[[2]uint64]ondisk.InodeRef{}}
}

// CopyContents copies the entries of host directory src into dir.
func (c *Copier) CopyContents(src string, dir ondisk.InodeRef, ipath string) error {
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		if err := c.CopyIn(filepath.Join(src, e.Name()), dir, e.Name(), path.Join(ipath, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// CopyIn copies host path src as name in image directory dir.
func (c *Copier) CopyIn(src string, dir ondisk.InodeRef, name, ipath string) error {
	fs := c.fs
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return &os.PathError{Op: "lstat", Path: src, Err: err}
	}
	typ := st.Mode & unix.S_IFMT
	c.count(1, 0, ipath)
	existing, ex, err := fs.Lookup(dir, name)
	switch {
	case err == nil && typ == unix.S_IFDIR && isDirMode(ex.Mode):
		return c.copyDir(src, existing, ipath, &st)
	case err == nil && (typ == unix.S_IFDIR || isDirMode(ex.Mode)):
		return pathErr(ipath, syscall.EEXIST)
	case err == nil:
		if err := fs.Unlink(dir, name); err != nil {
			return pathErr(ipath, err)
		}
	case !errors.Is(err, syscall.ENOENT):
		return pathErr(ipath, err)
	}
	key := [2]uint64{uint64(st.Dev), st.Ino}
	if typ != unix.S_IFDIR && st.Nlink > 1 {
		if id, ok := c.links[key]; ok {
			if err := fs.Link(id, dir, name); err != nil {
				return pathErr(ipath, err)
			}
			return nil
		}
	}
	var id ondisk.InodeRef
	switch typ {
	case unix.S_IFDIR:
		if id, err = fs.Mkdir(dir, name, st.Mode&0o7777, st.Uid, st.Gid); err != nil {
			return pathErr(ipath, err)
		}
		return c.copyDir(src, id, ipath, &st)
	case unix.S_IFREG:
		if id, err = fs.Create(dir, name, st.Mode, st.Uid, st.Gid, 0); err != nil {
			return pathErr(ipath, err)
		}
		if err := c.copyData(src, id, ipath, st.Size); err != nil {
			return err
		}
	case unix.S_IFLNK:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if id, err = fs.Symlink(dir, name, target, st.Uid, st.Gid); err != nil {
			return pathErr(ipath, err)
		}
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		if id, err = fs.Create(dir, name, st.Mode, st.Uid, st.Gid, ondisk.DecodeDevT(st.Rdev)); err != nil {
			return pathErr(ipath, err)
		}
	default:
		return fmt.Errorf("%s: unsupported file type %o", src, typ)
	}
	if st.Nlink > 1 {
		c.links[key] = id
	}
	return c.CopyMeta(src, id, ipath, &st)
}

// copyDir copies a directory's entries, then its attributes (so that the
// entries do not change its times afterwards).
func (c *Copier) copyDir(src string, id ondisk.InodeRef, ipath string, st *unix.Stat_t) error {
	if err := c.CopyContents(src, id, ipath); err != nil {
		return err
	}
	return c.CopyMeta(src, id, ipath, st)
}

// copyData copies the data segments of a host file, leaving its holes as holes.
func (c *Copier) copyData(src string, id ondisk.InodeRef, ipath string, size int64) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, min(size, chunk))
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		hole := size
		if err != nil {
			data = off // no SEEK_DATA support: copy everything
		} else if h, err := unix.Seek(fd, data, unix.SEEK_HOLE); err == nil {
			hole = min(h, size)
		}
		for p := data; p < hole; {
			n, err := f.ReadAt(buf[:min(int64(len(buf)), hole-p)], p)
			if n > 0 {
				if _, werr := c.fs.WriteAt(id, uint64(p), buf[:n]); werr != nil {
					return noSpaceErr(ipath, werr, p, size)
				}
				p += int64(n)
				c.count(0, int64(n), "")
			}
			if err == io.EOF {
				hole = p
				break
			}
			if err != nil {
				return err
			}
		}
		off = hole
	}
	if err := c.fs.Truncate(id, uint64(size)); err != nil {
		return pathErr(ipath, err)
	}
	return nil
}

// noSpaceErr names the image path in a write error; when the image is full
// it says how much of the file was copied (that part stays, as cp leaves
// it).
func noSpaceErr(ipath string, err error, copied, size int64) error {
	if !errors.Is(err, syscall.ENOSPC) {
		return pathErr(ipath, err)
	}
	return fmt.Errorf("%s: %w: the image is full (%d of %d bytes copied)", ipath, syscall.ENOSPC, copied, size)
}

// CopyMeta copies xattrs, then mode, owner and times.
func (c *Copier) CopyMeta(src string, id ondisk.InodeRef, ipath string, st *unix.Stat_t) error {
	names, err := listXattrs(src)
	if err != nil {
		return err
	}
	// A copy has the source's ACLs, not the ones the image directory's
	// default ACL gave the new inode (as cp -a and mkfs.btrfs --rootdir).
	for _, acl := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
		if !slices.Contains(names, acl) {
			if err := c.fs.RemoveXattr(id, acl); err != nil && !errors.Is(err, unix.ENODATA) && !errors.Is(err, unix.EOPNOTSUPP) {
				return pathErr(ipath, fmt.Errorf("xattr %s: %w", acl, err))
			}
		}
	}
	for _, n := range names {
		v, err := getXattr(src, n)
		if err != nil {
			if errors.Is(err, unix.ENODATA) {
				continue
			}
			return err
		}
		if err := c.fs.SetXattr(id, n, v, 0); err != nil {
			return pathErr(ipath, fmt.Errorf("xattr %s: %w", n, err))
		}
	}
	a := fsops.SetAttr{
		Valid: fsops.SetMode | fsops.SetUID | fsops.SetGID | fsops.SetAtime | fsops.SetMtime | fsops.SetCtime,
		Mode:  st.Mode & 0o7777, UID: st.Uid, GID: st.Gid,
		Atime: time.Unix(st.Atim.Unix()), Mtime: time.Unix(st.Mtim.Unix()), Ctime: time.Unix(st.Ctim.Unix()),
	}
	if _, err := c.fs.Setattr(id, a); err != nil {
		return pathErr(ipath, err)
	}
	return nil
}

// listXattrs returns the xattr names of a host path (not following symlinks).
func listXattrs(p string) ([]string, error) {
	sz, err := unix.Llistxattr(p, nil)
	if err != nil {
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		return nil, &os.PathError{Op: "listxattr", Path: p, Err: err}
	}
	if sz == 0 {
		return nil, nil
	}
	buf := make([]byte, sz)
	sz, err = unix.Llistxattr(p, buf)
	if err != nil {
		return nil, &os.PathError{Op: "listxattr", Path: p, Err: err}
	}
	var names []string
	start := 0
	for i := 0; i < sz; i++ {
		if buf[i] == 0 {
			if i > start {
				names = append(names, string(buf[start:i]))
			}
			start = i + 1
		}
	}
	return names, nil
}

// getXattr reads one xattr of a host path (not following symlinks).
func getXattr(p, name string) ([]byte, error) {
	sz, err := unix.Lgetxattr(p, name, nil)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, sz)
	sz, err = unix.Lgetxattr(p, name, buf)
	if err != nil {
		return nil, err
	}
	return buf[:sz], nil
}
