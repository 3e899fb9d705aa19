package gobtrfs

import (
	"io/fs"
	"slices"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Open opens the named file for reading, following symlinks. The result is a *File.
func (f *FS) Open(name string) (fs.File, error) {
	file, err := f.OpenFile(name)
	if err != nil {
		return nil, err
	}
	return file, nil
}

// OpenFile is Open returning the concrete *File.
func (f *FS) OpenFile(name string) (*File, error) {
	if err := f.errIfClosed("open", name); err != nil {
		return nil, err
	}
	r, err := f.resolve(name, true)
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return f.newFile(name, r.n, r.inode), nil
}

// Stat returns the FileInfo of name, following symlinks. Sys() is a *Stat.
func (f *FS) Stat(name string) (fs.FileInfo, error) { return f.stat("stat", name, true) }

// Lstat returns the FileInfo of name without following a final symlink.
func (f *FS) Lstat(name string) (fs.FileInfo, error) { return f.stat("lstat", name, false) }

func (f *FS) stat(op, name string, follow bool) (fs.FileInfo, error) {
	if err := f.errIfClosed(op, name); err != nil {
		return nil, err
	}
	r, err := f.resolve(name, follow)
	if err != nil {
		return nil, pathErr(op, name, err)
	}
	return &fileInfo{name: r.name, st: newStat(r.n, &r.inode)}, nil
}

// ReadDir returns the entries of directory name sorted by name.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.errIfClosed("readdir", name); err != nil {
		return nil, err
	}
	r, err := f.resolve(name, true)
	if err != nil {
		return nil, pathErr("readdir", name, err)
	}
	if r.inode.Mode&item.SIFMT != item.SIFDIR {
		return nil, pathErr("readdir", name, errNotDir)
	}
	var out []fs.DirEntry
	err = f.readDir(r.n, 0, -1, func(e *DirEntry) { out = append(out, e) })
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if err != nil {
		// with the entries read past a damaged block, as os.ReadDir
		return out, pathErr("readdir", name, err)
	}
	return out, nil
}

// ReadFile returns the whole content of the named file.
func (f *FS) ReadFile(name string) ([]byte, error) {
	file, err := f.OpenFile(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if file.inode.Mode&item.SIFMT == item.SIFDIR {
		return nil, pathErr("read", name, errIsDir)
	}
	if file.inode.Size > MaxReadFileSize {
		return nil, pathErr("read", name, errTooLarge(file.inode.Size))
	}
	buf := make([]byte, file.inode.Size)
	n, err := file.ReadAt(buf, 0)
	if n == len(buf) {
		err = nil
	}
	return buf[:n], err
}

// ReadLink returns the target of symlink name.
func (f *FS) ReadLink(name string) (string, error) {
	if err := f.errIfClosed("readlink", name); err != nil {
		return "", err
	}
	r, err := f.resolve(name, false)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	if r.inode.Mode&item.SIFMT != item.SIFLNK {
		return "", pathErr("readlink", name, errNotLink)
	}
	target, err := f.readlink(r.n, &r.inode)
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	return target, nil
}

// ListXattr returns the names of name's extended attributes (not following
// a final symlink, like llistxattr).
func (f *FS) ListXattr(name string) ([]string, error) {
	xs, err := f.xattrs(name)
	if err != nil {
		return nil, pathErr("listxattr", name, err)
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.Name
	}
	slices.Sort(out)
	return out, nil
}

// GetXattr returns the value of attribute attr of name (not following a
// final symlink, like lgetxattr). A missing attribute satisfies
// errors.Is(err, fs.ErrNotExist).
func (f *FS) GetXattr(name, attr string) ([]byte, error) {
	if err := f.errIfClosed("getxattr", name); err != nil {
		return nil, err
	}
	r, err := f.resolve(name, false)
	if err != nil {
		return nil, pathErr("getxattr", name, err)
	}
	v, err := f.e.GetXattr(r.n, attr)
	if err != nil {
		return nil, pathErr("getxattr", name, err)
	}
	return v, nil
}

// Xattr is one extended attribute.
type Xattr struct {
	Name  string // with its namespace: "user.x", "security.selinux", "system.posix_acl_access"
	Value []byte // as stored
}

// Xattrs returns every extended attribute of name with its value, sorted by
// name (not following a final symlink).
func (f *FS) Xattrs(name string) ([]Xattr, error) {
	xs, err := f.xattrs(name)
	if err != nil {
		return nil, pathErr("listxattr", name, err)
	}
	out := make([]Xattr, len(xs))
	for i, x := range xs {
		out[i] = Xattr{x.Name, x.Value}
	}
	slices.SortFunc(out, func(a, b Xattr) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *FS) xattrs(name string) ([]inode.Xattr, error) {
	if err := f.errIfClosed("listxattr", name); err != nil {
		return nil, err
	}
	r, err := f.resolve(name, false)
	if err != nil {
		return nil, err
	}
	return f.nodeXattrs(r.n)
}
