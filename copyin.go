package gobtrfs

import (
	"path/filepath"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/copyin"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
)

// MkfsOptions say how Mkfs makes a filesystem. The zero value gives
// btrfs-progs' default features.
type MkfsOptions struct {
	// Rootdir, when set, is a host directory copied into the new filesystem
	// (mkfs.btrfs --rootdir): modes, owners, times, xattrs, hard links,
	// symlinks, device nodes and holes.
	Rootdir string
	// Compress new data from Rootdir with "zstd", "zlib" or "lzo".
	Compress string
	// Label is the filesystem label.
	Label string
}

// Mkfs makes a new filesystem in a sparse file of size bytes at path (the
// file must not exist), optionally filled from a host directory.
func Mkfs(path string, size int64, o *MkfsOptions) error {
	if o == nil {
		o = &MkfsOptions{}
	}
	return mkfs.CreateFile(path, size, mkfs.Config{Rootdir: o.Rootdir, Compress: o.Compress, Label: o.Label})
}

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
