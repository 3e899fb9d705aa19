package fsread

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// emptyDir is what the kernel's new_simple_dir presents for a placeholder:
// a directory 0755 with one link, no data, and the current time (we take the
// time the FS was opened).
func (f *Engine) emptyDir() item.InodeItem {
	ts := item.TimespecOf(f.opened)
	return item.InodeItem{Mode: item.SIFDIR | 0o755, NLink: 1, Atime: ts, Mtime: ts, Ctime: ts, Otime: ts}
}

// Inode reads n's inode item.
func (f *Engine) Inode(n ondisk.InodeRef) (item.InodeItem, error) {
	if n.IsEmptySubvolDir() {
		return f.emptyDir(), nil
	}
	t, err := f.Tree(n.Root)
	if err != nil {
		return item.InodeItem{}, err
	}
	return inode.Read(t, n.Ino)
}

// Child turns a directory entry of dir into the node it names, crossing into
// another subvolume when the entry points to a ROOT_ITEM.
// mirrors btrfs_inode_by_name + fixup_tree_root_location
func (f *Engine) Child(dir ondisk.InodeRef, e inode.DirEntry) (ondisk.InodeRef, error) {
	switch e.Location.Type {
	case ondisk.InodeItemKey:
		return ondisk.InodeRef{Root: dir.Root, Ino: e.Location.ObjectID}, nil
	case ondisk.RootItemKey:
		return f.enterSubvol(dir, e)
	}
	return ondisk.InodeRef{}, fmt.Errorf("entry %q of %v: location %v: %w", e.Name, dir, e.Location,
		corruptf("location key is neither INODE_ITEM nor ROOT_ITEM"))
}

// enterSubvol follows a directory entry into subvolume e.Location.ObjectID.
// The link is live only if the root tree holds a ROOT_REF from dir's subvolume
// for this directory and name; a snapshot copies entries of nested
// subvolumes without their refs, and the kernel shows those as empty dirs.
func (f *Engine) enterSubvol(dir ondisk.InodeRef, e inode.DirEntry) (ondisk.InodeRef, error) {
	id := e.Location.ObjectID
	key := ondisk.Key{ObjectID: dir.Root, Type: ondisk.RootRefKey, Offset: uint64(id)}
	data, ok, err := f.info.RootTree.Lookup(key)
	if err != nil {
		return ondisk.InodeRef{}, fmt.Errorf("entry %q of %v: root ref %v: %w", e.Name, dir, key, err)
	}
	live := false
	if ok {
		ref, err := item.DecodeRootRef(data)
		if err != nil {
			return ondisk.InodeRef{}, fmt.Errorf("entry %q of %v: root ref %v: %w", e.Name, dir, key, corruptf("%w", err))
		}
		live = ref.DirID == dir.Ino && string(ref.Name) == e.Name
	}
	if !live {
		return ondisk.InodeRef{Root: dir.Root, Ino: ondisk.EmptySubvolDirObjectID}, nil
	}
	if _, err := f.Tree(id); err != nil {
		return ondisk.InodeRef{}, fmt.Errorf("entry %q of %v: subvolume %d: %w", e.Name, dir, id, err)
	}
	return ondisk.InodeRef{Root: id, Ino: ondisk.FirstFreeObjectID}, nil
}

// CheckLink refuses to treat target, reached through entry e of dir, as a
// directory unless e is its one link (a directory has one parent; see
// inode.CheckDirLink): an entry naming its own directory, the root or an
// ancestor would make every walker loop. x is target's inode; other file
// types pass. Call it before listing target or looking names up in it.
func (f *Engine) CheckLink(dir ondisk.InodeRef, e inode.DirEntry, target ondisk.InodeRef, x *item.InodeItem) error {
	if x.Mode&item.SIFMT != item.SIFDIR || target.IsEmptySubvolDir() {
		return nil
	}
	if target == f.root {
		return &inode.EntryError{Tree: dir.Root, Dir: dir.Ino, Index: e.Index, Name: e.Name,
			Target: target.Ino, Err: corruptf("names the root directory of this filesystem")}
	}
	if e.IsSubvol() {
		return inode.CheckSubvolLink(f.info.RootTree, dir.Root, dir.Ino, e)
	}
	t, err := f.Tree(dir.Root)
	if err != nil {
		return err
	}
	return inode.CheckDirLink(t, dir.Ino, e)
}
