package gobtrfs

import (
	"io/fs"
	"path"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/namei"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// resolved is the result of a path walk.
type resolved struct {
	n     ondisk.InodeRef
	inode item.InodeItem
	name  string // base name for FileInfo
}

// resolve walks name from this FS's root by internal/namei's rules: symlinks
// in the middle are always followed, a final one only if follow; absolute
// symlink targets restart at this FS's root and ".." never climbs above it.
func (f *FS) resolve(name string, follow bool) (resolved, error) {
	if !fs.ValidPath(name) {
		return resolved{}, fs.ErrInvalid
	}
	n, x, err := namei.Resolve(&walker{f: f}, f.root, name, follow)
	if err != nil {
		return resolved{}, err
	}
	return resolved{n: n, inode: x, name: path.Base(name)}, nil
}

// walker is an FS as namei walks it. It keeps the entry of its last lookup,
// which CheckLink needs.
type walker struct {
	f    *FS
	dir  ondisk.InodeRef
	last inode.DirEntry
}

func (w *walker) Stat(n ondisk.InodeRef) (item.InodeItem, error) { return w.f.inode(n) }

func (w *walker) Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, item.InodeItem, error) {
	e, n, err := w.f.lookupEntry(dir, name)
	if err != nil {
		return n, item.InodeItem{}, err
	}
	w.dir, w.last = dir, e
	x, err := w.f.inode(n)
	return n, x, err
}

func (w *walker) CheckLink(dir ondisk.InodeRef, name string, target ondisk.InodeRef, x *item.InodeItem) error {
	e := w.last
	if w.dir != dir || e.Name != name {
		var err error
		if e, _, err = w.f.lookupEntry(dir, name); err != nil {
			return err
		}
	}
	return w.f.checkLink(dir, e, target, x)
}

func (w *walker) Readlink(n ondisk.InodeRef, x *item.InodeItem) (string, error) {
	return w.f.readlink(n, x)
}
