package ondisk

import "fmt"

// InodeRef names an inode across the whole filesystem: the subvolume tree
// it lives in and its number. Every subvolume's root directory is inode
// 256, so an inode number alone is ambiguous: always carry the pair. (Not
// to be confused with the INODE_REF item, item.InodeRef, which names an
// inode's parent directory.)
// mirrors the kernel's (BTRFS_I(inode)->root, btrfs_ino(inode))
type InodeRef struct {
	Root ObjectID // the subvolume (fs tree) holding the inode
	Ino  ObjectID
}

func (r InodeRef) String() string {
	return fmt.Sprintf("inode %d (subvol %d)", uint64(r.Ino), uint64(r.Root))
}

// IsEmptySubvolDir reports whether r is the placeholder directory the kernel
// shows where a snapshot holds an entry for a subvolume that was not
// snapshotted with it (BTRFS_EMPTY_SUBVOL_DIR_OBJECTID). No directory entry
// can name inode 2 of a tree (file inodes start at 256), so the number alone
// marks it.
func (r InodeRef) IsEmptySubvolDir() bool { return r.Ino == EmptySubvolDirObjectID }
