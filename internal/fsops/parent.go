package fsops

import (
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// TopLevel is the root directory of the top-level subvolume (tree 5).
var TopLevel = ondisk.InodeRef{Root: ondisk.FSTreeObjectID, Ino: RootDirIno}

// Parent returns the directory that holds directory dir: through its inode
// ref, or for a subvolume's root directory through the subvolume's
// ROOT_BACKREF. The top level is its own parent.
func (f *FS) Parent(dir ondisk.InodeRef) (ondisk.InodeRef, error) {
	var out ondisk.InodeRef
	err := f.run(func(o *op) error {
		if dir.Ino != RootDirIno {
			p, err := o.parentDir(dir)
			out = ondisk.InodeRef{Root: dir.Root, Ino: p}
			return err
		}
		if dir.Root == ondisk.FSTreeObjectID {
			out = dir
			return nil
		}
		rt, err := o.tree(ondisk.RootTreeObjectID)
		if err != nil {
			return err
		}
		p, ok, err := rt.SearchForward(ondisk.Key{ObjectID: dir.Root, Type: ondisk.RootBackrefKey})
		if err != nil {
			return err
		}
		if !ok || p.Key().ObjectID != dir.Root || p.Key().Type != ondisk.RootBackrefKey {
			return errf(syscall.ENOENT, "parent of subvolume %d", dir.Root)
		}
		r, err := item.DecodeRootRef(p.Data())
		if err != nil {
			return corruptf("root backref %v: %w", p.Key(), err)
		}
		out = ondisk.InodeRef{Root: ondisk.ObjectID(p.Key().Offset), Ino: r.DirID}
		return nil
	})
	return out, err
}
