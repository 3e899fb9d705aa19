package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// attr is an inode's attributes as getattr reports them.
type attr struct {
	Mode   uint32 // type and permission bits
	Nlink  uint32
	UID    uint32
	GID    uint32
	Rdev   ondisk.DevT
	Size   uint64
	NBytes uint64 // bytes of data the inode owns (st_blocks*512)
	Atime  time.Time
	Mtime  time.Time
	Ctime  time.Time
	Btime  time.Time // the inode's otime (creation time)
	Gen    uint64    // transaction that created the inode
	Flags  uint64    // BTRFS_INODE_*
}

// dirent is one directory entry; Index is its DIR_INDEX (its position, stable
// while the directory lives).
type dirent struct {
	Name  string
	Index uint64
	Mode  uint32          // type bits only (S_IFDIR...)
	ID    ondisk.InodeRef // what it names
}

// statfs is what statfs(2) reports, in bytes.
type statfs struct {
	Total, Free, Avail uint64
	BlockSize          uint32
}

// backend is what both sides of the mount serve: reads by ID. Errors are
// the lower layers' own; the nodes turn them into errnos.
type backend interface {
	Root() ondisk.InodeRef
	Getattr(id ondisk.InodeRef) (attr, error)
	Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, attr, error)
	// ReadDir calls fn for each entry of dir with Index >= from, in index
	// order, until fn returns false.
	ReadDir(dir ondisk.InodeRef, from uint64, fn func(dirent) bool) error
	// ReadAt reads the on-disk bytes of id at off; n < len(p) at the end
	// of the on-disk file.
	ReadAt(id ondisk.InodeRef, p []byte, off int64) (int, error)
	Readlink(id ondisk.InodeRef) (string, error)
	ListXattr(id ondisk.InodeRef) ([]string, error)
	GetXattr(id ondisk.InodeRef, name string) ([]byte, error)
	// SeekData returns the first offset >= off with data (data) or in a
	// hole (!data), ENXIO past the end; holes and prealloc are holes.
	SeekData(id ondisk.InodeRef, off int64, data bool) (int64, error)
	Statfs() (statfs, error)
	// Forget drops per-inode state the backend keeps (open files).
	Forget(id ondisk.InodeRef)
	Close() error
}

// fill copies a into a FUSE attribute.
func (a *attr) fill(out *fuse.Attr, ino uint64) {
	out.Ino = ino
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Owner = fuse.Owner{Uid: a.UID, Gid: a.GID}
	out.Rdev = uint32(a.Rdev.Encode())
	out.Size = a.Size
	out.Blocks = (a.NBytes + 511) / 512
	out.Blksize = 4096
	out.SetTimes(&a.Atime, &a.Mtime, &a.Ctime)
}
