package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"io"
	"path"
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// imgFS is an image opened for changes by put, rm, mkdir, mv, ln and
// subvolume: paths inside it start at the top-level subvolume.
type imgFS struct {
	fs    *fsops.FS
	image string
}

// writeFlags is the flag set of write command name: errors and usage go to
// stderr.
func writeFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fl := flag.NewFlagSet(name, flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, usage) }
	return fl
}

// openImgFS opens image writable.
func openImgFS(image string, opts fsops.Options) (*imgFS, error) {
	f, err := fsops.OpenImage(image, opts)
	if err != nil {
		return nil, err
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

// splitImagePath cleans an image path into its components.
func splitImagePath(p string) []string {
	c := path.Clean("/" + p)
	if c == "/" {
		return nil
	}
	return strings.Split(c[1:], "/")
}

// lookup resolves an image path, following symlinks in all but the last
// component (and in the last too when follow is set).
func (m *imgFS) lookup(p string, follow bool) (ondisk.InodeRef, item.InodeItem, error) {
	id, x, err := m.walk(fsops.TopLevel, splitImagePath(p), follow, 0)
	if err != nil {
		return id, x, pathErr(p, err)
	}
	return id, x, nil
}

func (m *imgFS) walk(cur ondisk.InodeRef, parts []string, follow bool, depth int) (ondisk.InodeRef, item.InodeItem, error) {
	x, err := m.fs.Stat(cur)
	if err != nil {
		return cur, x, err
	}
	for i, name := range parts {
		if x.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return cur, x, syscall.ENOTDIR
		}
		switch name {
		case ".":
			continue
		case "..":
			if cur, err = m.fs.Parent(cur); err != nil {
				return cur, x, err
			}
			if x, err = m.fs.Stat(cur); err != nil {
				return cur, x, err
			}
			continue
		}
		next, nx, err := m.fs.Lookup(cur, name)
		if err != nil {
			return cur, x, err
		}
		last := i == len(parts)-1
		if nx.Mode&syscall.S_IFMT == syscall.S_IFLNK && (!last || follow) {
			if depth > 40 {
				return cur, x, syscall.ELOOP
			}
			target, err := m.fs.Readlink(next)
			if err != nil {
				return cur, x, err
			}
			base := cur
			if strings.HasPrefix(target, "/") {
				base = fsops.TopLevel
			}
			rest := append(splitImagePath(target), parts[i+1:]...)
			return m.walk(base, rest, follow, depth+1)
		}
		if nx.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			// entered only through its one link (rm -r of a crafted loop ends)
			if err := m.fs.CheckLink(cur, name, next); err != nil {
				return next, nx, err
			}
		}
		cur, x = next, nx
	}
	return cur, x, nil
}

// lookupParent resolves the directory that holds the last component of p
// and returns it with that name.
func (m *imgFS) lookupParent(p string) (ondisk.InodeRef, string, error) {
	parts := splitImagePath(p)
	if len(parts) == 0 {
		return ondisk.InodeRef{}, "", fmt.Errorf("%s: the top-level directory has no parent", p)
	}
	dir, x, err := m.walk(fsops.TopLevel, parts[:len(parts)-1], true, 0)
	if err != nil {
		return dir, "", pathErr(path.Dir(path.Clean("/"+p)), err)
	}
	if x.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return dir, "", pathErr(path.Dir(path.Clean("/"+p)), syscall.ENOTDIR)
	}
	return dir, parts[len(parts)-1], nil
}

func isDirMode(mode uint32) bool { return mode&syscall.S_IFMT == syscall.S_IFDIR }
