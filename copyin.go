package gobtrfs

import (
	"path/filepath"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/copyin"
)

// CopyIn copies the host file or directory tree src into the image
// directory dir as filepath.Base(src), as `gobtrfs put` does: mode, owner,
// nanosecond times, xattrs, hard links, symlinks, device nodes and holes.
// Existing directories are merged and existing files replaced.
func (w *RW) CopyIn(src, dir string) error {
	d, x, err := w.lookup(dir, true)
	if err != nil {
		return pathError("copyin", dir, err)
	}
	if x.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return pathError("copyin", dir, syscall.ENOTDIR)
	}
	name := filepath.Base(filepath.Clean(src))
	c := copyin.New(w.f)
	if name == "/" || name == "." || name == ".." {
		return c.CopyContents(src, d, dir)
	}
	return c.CopyIn(src, d, name, filepath.Join("/", dir, name))
}
