package gobtrfs

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// node names an inode across subvolumes. Every subvolume's root directory is
// inode 256, so an inode number alone is ambiguous: always carry the pair.
type node struct {
	subvol ondisk.ObjectID
	ino    ondisk.ObjectID
	// empty marks the placeholder directory the kernel shows where a
	// snapshot holds a link to a subvolume that was not snapshotted with it
	// (inode 2, BTRFS_EMPTY_SUBVOL_DIR_OBJECTID).
	empty bool
}

func (n node) String() string { return fmt.Sprintf("inode %d (subvol %d)", n.ino, n.subvol) }

// emptyDir is what the kernel's new_simple_dir presents for a placeholder:
// a directory 0755 with one link, no data, and the current time (we take the
// time the FS was opened).
func (f *FS) emptyDir() item.InodeItem {
	ts := item.TimespecOf(f.opened)
	return item.InodeItem{Mode: item.SIFDIR | 0o755, NLink: 1, Atime: ts, Mtime: ts, Ctime: ts, Otime: ts}
}

// inode reads n's inode item.
func (f *FS) inode(n node) (item.InodeItem, error) {
	if n.empty {
		return f.emptyDir(), nil
	}
	t, err := f.tree(n.subvol)
	if err != nil {
		return item.InodeItem{}, err
	}
	return inode.Read(t, n.ino)
}

// child turns a directory entry of dir into the node it names, crossing into
// another subvolume when the entry points to a ROOT_ITEM.
// mirrors btrfs_inode_by_name + fixup_tree_root_location
func (f *FS) child(dir node, e inode.DirEntry) (node, error) {
	switch e.Location.Type {
	case ondisk.InodeItemKey:
		return node{subvol: dir.subvol, ino: e.Location.ObjectID}, nil
	case ondisk.RootItemKey:
		return f.enterSubvol(dir, e)
	}
	return node{}, fmt.Errorf("entry %q of %v: location %v: %w", e.Name, dir, e.Location,
		corruptf("location key is neither INODE_ITEM nor ROOT_ITEM"))
}

// enterSubvol follows a directory entry into subvolume e.Location.ObjectID.
// The link is live only if the root tree holds a ROOT_REF from dir's subvolume
// for this directory and name; a snapshot copies entries of nested
// subvolumes without their refs, and the kernel shows those as empty dirs.
func (f *FS) enterSubvol(dir node, e inode.DirEntry) (node, error) {
	id := e.Location.ObjectID
	key := ondisk.Key{ObjectID: dir.subvol, Type: ondisk.RootRefKey, Offset: uint64(id)}
	data, ok, err := f.info.RootTree.Lookup(key)
	if err != nil {
		return node{}, fmt.Errorf("entry %q of %v: root ref %v: %w", e.Name, dir, key, err)
	}
	live := false
	if ok {
		ref, err := item.DecodeRootRef(data)
		if err != nil {
			return node{}, fmt.Errorf("entry %q of %v: root ref %v: %w", e.Name, dir, key, corruptf("%w", err))
		}
		live = ref.DirID == dir.ino && string(ref.Name) == e.Name
	}
	if !live {
		return node{subvol: dir.subvol, ino: ondisk.EmptySubvolDirObjectID, empty: true}, nil
	}
	if _, err := f.tree(id); err != nil {
		return node{}, fmt.Errorf("entry %q of %v: subvolume %d: %w", e.Name, dir, id, err)
	}
	return node{subvol: id, ino: ondisk.FirstFreeObjectID}, nil
}

// checkLink refuses to treat target, reached through entry e of dir, as a
// directory unless e is its one link (a directory has one parent; see
// inode.CheckDirLink): an entry naming its own directory, the root or an
// ancestor would make every walker loop. x is target's inode; other file
// types pass. Call it before listing target or looking names up in it.
func (f *FS) checkLink(dir node, e inode.DirEntry, target node, x *item.InodeItem) error {
	if x.Mode&item.SIFMT != item.SIFDIR || target.empty {
		return nil
	}
	if target == f.root {
		return &inode.EntryError{Tree: dir.subvol, Dir: dir.ino, Index: e.Index, Name: e.Name,
			Target: target.ino, Err: corruptf("names the root directory of this filesystem")}
	}
	if e.IsSubvol() {
		return inode.CheckSubvolLink(f.info.RootTree, dir.subvol, dir.ino, e)
	}
	t, err := f.tree(dir.subvol)
	if err != nil {
		return err
	}
	return inode.CheckDirLink(t, dir.ino, e)
}
