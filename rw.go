package gobtrfs

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/namei"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// RW is a filesystem image open for changes: paths are slash-separated and
// start at the top-level subvolume. Every change runs in the current
// transaction; Commit makes it durable (also done every CommitInterval and
// by Close).
//
// RW is safe for concurrent use: its only state is the WriteAt gather
// buffer (rw_writebuf.go), which no call sees stale, and each
// operation on the image it makes runs alone (fsops serialises them). A
// call made of several operations (a path walk, MkdirAll, WriteFile,
// RemoveAll) is not atomic: another goroutine's change may land between
// its steps, as on a mounted filesystem.
type RW struct {
	f  *fsops.FS
	wb *writeBuf // consecutive WriteAt calls gathered (rw_writebuf.go)
	// timerStop and timerDone run the CommitInterval timer (nil without).
	timerStop, timerDone chan struct{}
	timerOnce            sync.Once
}

// RWOptions tune OpenRW.
type RWOptions struct {
	// Compress new file data with "zstd", "zlib" or "lzo" ("" or "none": off).
	Compress string
	// CommitInterval commits on a timer (0: only on Commit and Close).
	CommitInterval time.Duration
}

// OpenRW opens the image at path for changes.
func OpenRW(path string, opts *RWOptions) (*RW, error) {
	if opts == nil {
		opts = &RWOptions{}
	}
	var o fsops.Options
	if opts.Compress != "" {
		a, err := compress.ParseAlg(opts.Compress)
		if err != nil {
			return nil, err
		}
		o.Compress = a
	}
	f, err := fsops.OpenImage(path, o)
	if err != nil {
		return nil, err
	}
	// What a crash left of files deleted while open goes now, as at the
	// kernel's read-write mount (btrfs_orphan_cleanup).
	if _, err := f.CleanOrphans(); err != nil {
		f.Close()
		return nil, err
	}
	w := &RW{f: f, wb: &writeBuf{}}
	if opts.CommitInterval > 0 {
		w.startCommitTimer(opts.CommitInterval)
	}
	return w, nil
}

// Commit makes every change so far durable.
func (w *RW) Commit() error {
	if err := w.settle(); err != nil {
		return err
	}
	return w.f.Commit()
}

// Close commits and closes the image.
func (w *RW) Close() error {
	w.stopCommitTimer()
	err := w.settle()
	w.wb.data = nil
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func pathError(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// parent resolves the directory holding name and returns the last component.
func (w *RW) parent(name string) (ondisk.InodeRef, string, error) {
	if err := w.settle(); err != nil {
		return ondisk.InodeRef{}, "", err
	}
	return w.f.ResolveParent(name)
}

// lookup resolves name (paths are walked by internal/namei's rules).
func (w *RW) lookup(name string, follow bool) (ondisk.InodeRef, item.InodeItem, error) {
	if err := w.settle(); err != nil {
		return ondisk.InodeRef{}, item.InodeItem{}, err
	}
	return w.f.Resolve(name, follow)
}

// Mkdir makes a directory.
func (w *RW) Mkdir(name string, perm fs.FileMode) error {
	dir, base, err := w.parent(name)
	if err == nil {
		_, err = w.f.Mkdir(dir, base, syscall.S_IFDIR|uint32(perm.Perm()), 0, 0)
	}
	if err != nil {
		return pathError("mkdir", name, err)
	}
	return nil
}

// MkdirAll makes a directory and any missing parents.
func (w *RW) MkdirAll(name string, perm fs.FileMode) error {
	parts := namei.Split(strings.TrimRight(name, "/"))
	for i := range parts {
		p := "/" + strings.Join(parts[:i+1], "/")
		if _, x, err := w.lookup(p, true); err == nil {
			if x.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				return pathError("mkdir", p, syscall.ENOTDIR)
			}
			continue
		}
		if err := w.Mkdir(p, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// WriteFile creates or truncates name and writes data to it.
func (w *RW) WriteFile(name string, data []byte, perm fs.FileMode) error {
	id, err := w.openFile(name, perm, true)
	if err == nil {
		if len(data) > 0 {
			_, err = w.f.WriteAt(id, 0, data)
		}
	}
	if err != nil {
		return pathError("write", name, err)
	}
	return nil
}

// openFile returns the regular file name, creating it when missing;
// truncate empties an existing one.
func (w *RW) openFile(name string, perm fs.FileMode, truncate bool) (ondisk.InodeRef, error) {
	id, x, err := w.lookup(name, true)
	if errors.Is(err, syscall.ENOENT) {
		dir, base, perr := w.parent(name)
		if perr != nil {
			return id, perr
		}
		return w.f.Create(dir, base, syscall.S_IFREG|uint32(perm.Perm()), 0, 0, 0)
	}
	if err != nil {
		return id, err
	}
	if x.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return id, syscall.EISDIR
	}
	if truncate && x.Size > 0 {
		err = w.f.Truncate(id, 0)
	}
	return id, err
}

// WriteAt writes data at off in the regular file name, creating it (0644)
// if missing. A small write that continues the previous one to the same
// file is gathered with it in memory (rw_writebuf.go) and written by a
// later call: the next write elsewhere, any other operation, Commit,
// Fsync or Close, which return its error if that write fails.
func (w *RW) WriteAt(name string, data []byte, off int64) (int, error) {
	if off < 0 {
		return 0, pathError("write", name, syscall.EINVAL)
	}
	if off > math.MaxInt64-int64(len(data)) {
		// past the largest file size (MAX_LFS_FILESIZE): refused now, not
		// gathered to fail in whichever call writes the buffer out
		return 0, pathError("write", name, syscall.EFBIG)
	}
	gen := w.wb.gen.Load() // before the name is resolved (rw_writebuf.go)
	if ok, err := w.bufferedWrite(name, nil, gen, data, off); ok || err != nil {
		if err != nil {
			return 0, err
		}
		return len(data), nil
	}
	id, err := w.openFile(name, 0o644, false)
	if err != nil {
		return 0, pathError("write", name, err)
	}
	if w.gatherable(id) {
		if ok, err := w.bufferedWrite(name, &id, gen, data, off); ok || err != nil {
			if err != nil {
				return 0, err
			}
			return len(data), nil
		}
	}
	n, err := w.f.WriteAt(id, uint64(off), data)
	if err != nil {
		return n, pathError("write", name, err)
	}
	return n, nil
}

// ReadFile returns the contents of name.
func (w *RW) ReadFile(name string) ([]byte, error) {
	id, x, err := w.lookup(name, true)
	if err == nil && x.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		err = syscall.EISDIR
	}
	if err == nil && x.Size > MaxReadFileSize {
		err = errTooLarge(x.Size)
	}
	var b []byte
	if err == nil {
		b, err = w.f.ReadAt(id, 0, int(x.Size))
	}
	if err != nil {
		return nil, pathError("read", name, err)
	}
	return b, nil
}

// Readlink returns the target of symlink name.
func (w *RW) Readlink(name string) (string, error) {
	id, _, err := w.lookup(name, false)
	var target string
	if err == nil {
		target, err = w.f.Readlink(id)
	}
	if err != nil {
		return "", pathError("readlink", name, err)
	}
	return target, nil
}

// Symlink makes newname a symbolic link to target.
func (w *RW) Symlink(target, newname string) error {
	dir, base, err := w.parent(newname)
	if err == nil {
		_, err = w.f.Symlink(dir, base, target, 0, 0)
	}
	if err != nil {
		return pathError("symlink", newname, err)
	}
	return nil
}

// Link makes newname a hard link to oldname.
func (w *RW) Link(oldname, newname string) error {
	id, _, err := w.lookup(oldname, false)
	if err == nil {
		var dir ondisk.InodeRef
		var base string
		if dir, base, err = w.parent(newname); err == nil {
			err = w.f.Link(id, dir, base)
		}
	}
	if err != nil {
		return pathError("link", newname, err)
	}
	return nil
}

// Mknod makes a fifo, socket or device node (mode includes the type bits).
// dev is the device number as btrfs stores it, major<<20 | minor (not the
// stat(2) form of Stat.Rdev).
func (w *RW) Mknod(name string, mode uint32, dev uint64) error {
	dir, base, err := w.parent(name)
	if err == nil {
		_, err = w.f.Create(dir, base, mode, 0, 0, ondisk.DevT(dev))
	}
	if err != nil {
		return pathError("mknod", name, err)
	}
	return nil
}

// Remove removes a file, an empty directory or an empty subvolume.
func (w *RW) Remove(name string) error {
	defer w.namesChanged()
	_, x, err := w.lookup(name, false)
	var dir ondisk.InodeRef
	var base string
	if err == nil {
		dir, base, err = w.parent(name)
	}
	if err == nil {
		if x.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			err = w.f.Rmdir(dir, base)
		} else {
			err = w.f.Unlink(dir, base)
		}
	}
	if err != nil {
		return pathError("remove", name, err)
	}
	return nil
}

// RemoveAll removes name and everything below it (subvolumes included).
// A name whose last component is "." or ".." is refused (EINVAL), as
// os.RemoveAll refuses it.
func (w *RW) RemoveAll(name string) error {
	defer w.namesChanged()
	if parts := namei.Split(strings.TrimRight(name, "/")); len(parts) > 0 && (parts[len(parts)-1] == "." || parts[len(parts)-1] == "..") {
		return pathError("remove", name, syscall.EINVAL)
	}
	id, x, err := w.lookup(name, false)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return pathError("remove", name, err)
	}
	if x.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		ents, err := w.f.ReadDir(id)
		if err != nil {
			return pathError("remove", name, err)
		}
		for _, e := range ents {
			if err := w.RemoveAll(strings.TrimRight(name, "/") + "/" + e.Name); err != nil {
				return err
			}
		}
		if e := w.isSubvolume(name); e {
			dir, base, err := w.parent(name)
			if err == nil {
				err = w.f.DeleteSubvolume(dir, base)
			}
			if err != nil {
				return pathError("remove", name, err)
			}
			return nil
		}
	}
	return w.Remove(name)
}

func (w *RW) isSubvolume(name string) bool {
	id, _, err := w.lookup(name, false)
	return err == nil && id.Ino == fsops.RootDirIno && id != fsops.TopLevel
}

// Rename moves oldname to newname, replacing a file there (as rename(2)).
func (w *RW) Rename(oldname, newname string) error { return w.RenameFlags(oldname, newname, 0) }

// RENAME_NOREPLACE and RENAME_EXCHANGE for RenameFlags.
const (
	RenameNoReplace = fsops.RenameNoReplace
	RenameExchange  = fsops.RenameExchange
)

// RenameFlags is Rename with RenameNoReplace or RenameExchange.
func (w *RW) RenameFlags(oldname, newname string, flags uint32) error {
	defer w.namesChanged()
	sd, sb, err := w.parent(oldname)
	if err == nil {
		var dd ondisk.InodeRef
		var db string
		if dd, db, err = w.parent(newname); err == nil {
			err = w.f.Rename(sd, sb, dd, db, flags)
		}
	}
	if err != nil {
		return pathError("rename", oldname, err)
	}
	return nil
}

func (w *RW) setattr(op, name string, follow bool, a fsops.SetAttr) error {
	id, _, err := w.lookup(name, follow)
	if err == nil {
		_, err = w.f.Setattr(id, a)
	}
	if err != nil {
		return pathError(op, name, err)
	}
	return nil
}

// Chmod changes the permission bits; a POSIX access ACL follows them (its
// owner, mask or group, and other entries), as on Linux.
func (w *RW) Chmod(name string, mode fs.FileMode) error {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= syscall.S_ISUID
	}
	if mode&fs.ModeSetgid != 0 {
		m |= syscall.S_ISGID
	}
	if mode&fs.ModeSticky != 0 {
		m |= syscall.S_ISVTX
	}
	return w.setattr("chmod", name, true, fsops.SetAttr{Valid: fsops.SetMode, Mode: m})
}

// Lchown changes the owner without following a final symlink.
func (w *RW) Lchown(name string, uid, gid int) error {
	return w.setattr("chown", name, false, fsops.SetAttr{Valid: fsops.SetUID | fsops.SetGID, UID: uint32(uid), GID: uint32(gid)})
}

// Chtimes sets access and modification times (nanoseconds kept).
func (w *RW) Chtimes(name string, atime, mtime time.Time) error {
	return w.setattr("chtimes", name, true, fsops.SetAttr{Valid: fsops.SetAtime | fsops.SetMtime, Atime: atime, Mtime: mtime})
}

// Truncate changes the size of a regular file.
func (w *RW) Truncate(name string, size int64) error {
	if size < 0 {
		return pathError("truncate", name, syscall.EINVAL)
	}
	return w.setattr("truncate", name, true, fsops.SetAttr{Valid: fsops.SetSize, Size: uint64(size)})
}

// Fallocate preallocates (mode 0 or FallocKeepSize) or punches a hole
// (FallocPunchHole|FallocKeepSize), as fallocate(2).
func (w *RW) Fallocate(name string, mode uint32, off, length int64) error {
	id, _, err := w.lookup(name, true)
	if err == nil {
		err = w.f.Fallocate(id, mode, uint64(off), uint64(length))
	}
	if err != nil {
		return pathError("fallocate", name, err)
	}
	return nil
}

// Fallocate modes.
const (
	FallocKeepSize  = fsops.FallocKeepSize
	FallocPunchHole = fsops.FallocPunchHole
)

// Clone reflinks length bytes of src at srcOff into dst at dstOff (sector
// aligned, as FICLONERANGE); both files share the data until rewritten.
func (w *RW) Clone(src string, srcOff int64, dst string, dstOff, length int64) error {
	s, _, err := w.lookup(src, true)
	if err == nil {
		var d ondisk.InodeRef
		if d, err = w.openFile(dst, 0o644, false); err == nil {
			err = w.f.Clone(s, uint64(srcOff), d, uint64(dstOff), uint64(length))
		}
	}
	if err != nil {
		return pathError("clone", dst, err)
	}
	return nil
}

// Setxattr sets an extended attribute (flags as setxattr(2)).
// system.posix_acl_access and system.posix_acl_default take the kernel's
// ACL format and rules: the value is validated (EINVAL, EOPNOTSUPP; a
// default ACL only on a directory, else EACCES), an access ACL sets the
// permission bits and is stored only when they cannot express it. New
// files and directories inherit their directory's default ACL. The
// library acts with root's privileges: S_ISGID is kept.
func (w *RW) Setxattr(name, attr string, value []byte, flags int) error {
	id, _, err := w.lookup(name, false)
	if err == nil {
		err = w.f.SetXattr(id, attr, value, flags)
	}
	if err != nil {
		return pathError("setxattr", name, err)
	}
	return nil
}

// Removexattr removes an extended attribute (an ACL that is not set is
// no error, as on btrfs).
func (w *RW) Removexattr(name, attr string) error {
	id, _, err := w.lookup(name, false)
	if err == nil {
		err = w.f.RemoveXattr(id, attr)
	}
	if err != nil {
		return pathError("removexattr", name, err)
	}
	return nil
}

// CreateSubvolume makes an empty subvolume at name.
func (w *RW) CreateSubvolume(name string) error {
	dir, base, err := w.parent(name)
	if err == nil {
		_, err = w.f.CreateSubvolume(dir, base, syscall.S_IFDIR|0o755, 0, 0)
	}
	if err != nil {
		return pathError("subvolume create", name, err)
	}
	return nil
}

// Snapshot makes name a snapshot of the subvolume at src ("/" is the top level).
func (w *RW) Snapshot(src, name string, readonly bool) error {
	sid, _, err := w.lookup(src, true)
	if err == nil && sid.Ino != fsops.RootDirIno {
		err = fmt.Errorf("%s is not a subvolume", src)
	}
	if err == nil {
		var dir ondisk.InodeRef
		var base string
		if dir, base, err = w.parent(name); err == nil {
			_, err = w.f.Snapshot(ondisk.ObjectID(sid.Root), dir, base, readonly)
		}
	}
	if err != nil {
		return pathError("snapshot", name, err)
	}
	return nil
}

// DeleteSubvolume deletes the subvolume at name with everything in it.
func (w *RW) DeleteSubvolume(name string) error {
	defer w.namesChanged()
	dir, base, err := w.parent(name)
	if err == nil {
		err = w.f.DeleteSubvolume(dir, base)
	}
	if err != nil {
		return pathError("subvolume delete", name, err)
	}
	return nil
}
