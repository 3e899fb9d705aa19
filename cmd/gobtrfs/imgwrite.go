package main

import (
	"errors"
	"fmt"
	"path"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// imgFS is an image opened for changes by put, rm, mkdir, mv, ln and
// subvolume: paths inside it start at the top-level subvolume.
type imgFS struct {
	fs    *fsops.FS
	image string
}

// openImgFS opens image writable.
func openImgFS(image string, opts fsops.Options) (*imgFS, error) {
	if err := checkImagePath(image); err != nil {
		return nil, err
	}
	f, err := fsops.OpenImage(image, opts)
	if err != nil {
		return nil, imageErr(image, err)
	}
	return &imgFS{fs: f, image: image}, nil
}

// finish commits and closes the image; err is the command's own error, which
// wins. What was done before an error is kept, as cp and rm keep it.
func (m *imgFS) finish(err error) error {
	cerr := m.fs.Close()
	if cerr != nil {
		cerr = fmt.Errorf("%s: commit: %w", m.image, cerr)
	}
	if err != nil {
		return errors.Join(err, cerr) // a failed commit loses what was done: say so
	}
	return cerr
}

// pathErr names the image path in an error, keeping the errno readable:
// "/a/b: no such file or directory".
func pathErr(p string, err error) error {
	var en syscall.Errno
	if errors.As(err, &en) {
		return fmt.Errorf("%s: %w", p, en)
	}
	return fmt.Errorf("%s: %w", p, err)
}

// lookup resolves an image path, following symlinks in all but the last
// component (and in the last too when follow is set); paths are walked by
// internal/namei's rules.
func (m *imgFS) lookup(p string, follow bool) (ondisk.InodeRef, item.InodeItem, error) {
	id, x, err := m.fs.Resolve(p, follow)
	if err != nil {
		return id, x, pathErr(p, err)
	}
	return id, x, nil
}

// lookupParent resolves the directory that holds the last component of p
// and returns it with that name.
func (m *imgFS) lookupParent(p string) (ondisk.InodeRef, string, error) {
	dir, name, err := m.fs.ResolveParent(p)
	switch {
	case err == nil:
		return dir, name, nil
	case name == "":
		return dir, "", fmt.Errorf("%s: the top-level directory has no parent", p)
	case name == "." || name == "..":
		return dir, "", pathErr(p, err)
	}
	return dir, "", pathErr(path.Dir(path.Clean("/"+p)), err)
}

func isDirMode(mode uint32) bool { return mode&syscall.S_IFMT == syscall.S_IFDIR }
