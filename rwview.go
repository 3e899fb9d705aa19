package gobtrfs

import (
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Stat returns the FileInfo of name in the RW's current state (uncommitted
// changes included), following symlinks; Sys() is a *Stat.
func (w *RW) Stat(name string) (fs.FileInfo, error) { return w.stat("stat", name, true) }

// Lstat is Stat without following a final symlink.
func (w *RW) Lstat(name string) (fs.FileInfo, error) { return w.stat("lstat", name, false) }

func (w *RW) stat(op, name string, follow bool) (fs.FileInfo, error) {
	id, x, err := w.lookup(name, follow)
	if err != nil {
		return nil, pathError(op, name, err)
	}
	return &fileInfo{name: path.Base(name), st: newStat(id, &x)}, nil
}

// ReadDir returns the entries of directory name in the RW's current state,
// sorted by name (as os.ReadDir).
func (w *RW) ReadDir(name string) ([]fs.DirEntry, error) {
	id, x, err := w.lookup(name, true)
	if err == nil && x.Mode&item.SIFMT != item.SIFDIR {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, pathError("readdir", name, err)
	}
	ents, err := w.f.ReadDir(id)
	if err != nil {
		return nil, pathError("readdir", name, err)
	}
	out := make([]fs.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = &rwDirEntry{w: w, dir: id, e: e}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// RWFS is the io/fs view of an RW (RW.FS): the current state of the image
// being written, uncommitted changes included, from the top-level
// subvolume, with io/fs names ("." is the top level, no leading slash).
// It is an fs.FS, fs.StatFS, fs.ReadDirFS, fs.ReadFileFS and
// fs.ReadLinkFS; its files are *RWFile values opened read-only. A tree
// that changes while it is walked shows the changes, as a mounted
// filesystem does.
type RWFS struct{ w *RW }

var (
	_ fs.FS         = (*RWFS)(nil)
	_ fs.StatFS     = (*RWFS)(nil)
	_ fs.ReadDirFS  = (*RWFS)(nil)
	_ fs.ReadFileFS = (*RWFS)(nil)
	_ fs.ReadLinkFS = (*RWFS)(nil)
)

// FS returns the io/fs view of the RW's current state.
func (w *RW) FS() *RWFS { return &RWFS{w: w} }

// rwName turns a valid io/fs name into the RW's form.
func rwName(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return "/" + name, nil
}

// renamed gives err (an *fs.PathError of the RW's name) the io/fs name.
func renamed(err error, name string) error {
	if pe, ok := err.(*fs.PathError); ok {
		return &fs.PathError{Op: pe.Op, Path: name, Err: pe.Err}
	}
	return err
}

// Open opens name for reading; the result is an *RWFile.
func (v *RWFS) Open(name string) (fs.File, error) {
	p, err := rwName("open", name)
	if err != nil {
		return nil, err
	}
	f, err := v.w.OpenFile(p, 0, 0)
	if err != nil {
		return nil, renamed(err, name)
	}
	f.name = name
	return f, nil
}

// Stat returns the FileInfo of name, following symlinks.
func (v *RWFS) Stat(name string) (fs.FileInfo, error) {
	p, err := rwName("stat", name)
	if err != nil {
		return nil, err
	}
	fi, err := v.w.Stat(p)
	return fi, renamed(err, name)
}

// Lstat returns the FileInfo of name without following a final symlink.
func (v *RWFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := rwName("lstat", name)
	if err != nil {
		return nil, err
	}
	fi, err := v.w.Lstat(p)
	return fi, renamed(err, name)
}

// ReadDir returns the entries of directory name sorted by name.
func (v *RWFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := rwName("readdir", name)
	if err != nil {
		return nil, err
	}
	ents, err := v.w.ReadDir(p)
	return ents, renamed(err, name)
}

// ReadFile returns the content of name.
func (v *RWFS) ReadFile(name string) ([]byte, error) {
	p, err := rwName("read", name)
	if err != nil {
		return nil, err
	}
	b, err := v.w.ReadFile(p)
	return b, renamed(err, name)
}

// ReadLink returns the target of symlink name.
func (v *RWFS) ReadLink(name string) (string, error) {
	p, err := rwName("readlink", name)
	if err != nil {
		return "", err
	}
	t, err := v.w.Readlink(p)
	return t, renamed(err, name)
}
