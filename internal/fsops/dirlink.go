package fsops

import (
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Readers of an image that may be hostile (the FUSE mount) list and walk
// directories through these two, which apply the rules of internal/inode:
// entries no directory can hold are skipped, and a directory is entered
// only through its one link, so no walk can loop.

// ListDir lists dir in index order like ReadDir, but skips (and passes to
// bad, if not nil) items that do not parse and entries with names or types
// no directory can hold, listing the rest.
func (f *FS) ListDir(dir ondisk.InodeRef, bad func(error)) ([]Entry, error) {
	var out []Entry
	err := f.run(func(o *op) error {
		t, err := o.tree(dir.Root)
		if err != nil {
			return err
		}
		return inode.ReadDir(t, dir.Ino, 0, func(e inode.DirEntry) bool {
			out = append(out, Entry{Name: e.Name, Index: e.Index, Type: e.Type, Location: e.Location})
			return true
		}, bad)
	})
	return out, err
}

// CheckLink verifies that name in dir, which resolves to the directory (or
// subvolume root) target, is that directory's one link: its back reference
// leads to (dir, name). Call it before listing or walking target.
func (f *FS) CheckLink(dir ondisk.InodeRef, name string, target ondisk.InodeRef) error {
	return f.run(func(o *op) error {
		if target.Root != dir.Root {
			rt, err := o.tree(ondisk.RootTreeObjectID)
			if err != nil {
				return err
			}
			e := inode.DirEntry{Name: name, Location: ondisk.Key{ObjectID: target.Root, Type: ondisk.RootItemKey}}
			return inode.CheckSubvolLink(rt, dir.Root, dir.Ino, e)
		}
		t, err := o.tree(dir.Root)
		if err != nil {
			return err
		}
		e := inode.DirEntry{Name: name, Location: ondisk.Key{ObjectID: target.Ino, Type: ondisk.InodeItemKey}}
		return inode.CheckDirLink(t, dir.Ino, e)
	})
}
