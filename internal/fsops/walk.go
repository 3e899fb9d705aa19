package fsops

import (
	"github.com/gobtrfs/gobtrfs/internal/namei"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// walkFS is an FS as namei walks it.
type walkFS struct{ f *FS }

func (w walkFS) Stat(ref ondisk.InodeRef) (item.InodeItem, error) { return w.f.Stat(ref) }

func (w walkFS) Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, item.InodeItem, error) {
	return w.f.Lookup(dir, name)
}

func (w walkFS) CheckLink(dir ondisk.InodeRef, name string, target ondisk.InodeRef, _ *item.InodeItem) error {
	return w.f.CheckLink(dir, name, target)
}

func (w walkFS) Readlink(ref ondisk.InodeRef, _ *item.InodeItem) (string, error) {
	return w.f.Readlink(ref)
}

// Resolve walks path from the top-level subvolume's root directory by
// namei's rules; a final symlink is followed when follow is set.
func (f *FS) Resolve(path string, follow bool) (ondisk.InodeRef, item.InodeItem, error) {
	return namei.Resolve(walkFS{f}, TopLevel, path, follow)
}

// ResolveParent walks path but its last component (see
// namei.ResolveParent) and returns the directory holding it and its name.
func (f *FS) ResolveParent(path string) (ondisk.InodeRef, string, error) {
	return namei.ResolveParent(walkFS{f}, TopLevel, path)
}
