package gobtrfs

import (
	"io/fs"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Stat is the Sys() value of every fs.FileInfo this package returns: the
// inode as btrfs stores it.
type Stat struct {
	Ino    uint64 // inode number; 256 for every subvolume root
	Subvol uint64 // subvolume (tree) holding the inode
	Nlink  uint32 // hard links (names) of the inode
	UID    uint32 // owner
	GID    uint32 // group
	// Rdev is the device number in the form stat(2) returns (see Major/Minor);
	// btrfs stores the kernel's internal form (major<<20 | minor).
	Rdev       uint64
	Size       int64     // bytes in the file (i_size)
	Blocks     int64     // 512-byte blocks: NBytes/512
	NBytes     uint64    // bytes of data the inode owns
	Mode       uint32    // Linux mode bits, S_IFMT included
	Flags      uint64    // BTRFS_INODE_* flags
	Generation uint64    // transaction that created the inode
	Transid    uint64    // last transaction that changed it
	Atime      time.Time // last access
	Mtime      time.Time // last change of the content
	Ctime      time.Time // last change of the inode
	Otime      time.Time // creation time
}

// Major returns the device's major number.
func (s *Stat) Major() uint32 { return ondisk.DecodeDevT(s.Rdev).Major() }

// Minor returns the device's minor number.
func (s *Stat) Minor() uint32 { return ondisk.DecodeDevT(s.Rdev).Minor() }

func newStat(n ondisk.InodeRef, x *item.InodeItem) *Stat {
	return &Stat{
		Ino: uint64(n.Ino), Subvol: uint64(n.Root), Nlink: x.NLink, UID: x.UID, GID: x.GID,
		Rdev: x.Rdev.Encode(), Size: int64(x.Size), Blocks: int64(x.NBytes / 512), NBytes: x.NBytes,
		Mode: x.Mode, Flags: x.Flags, Generation: x.Generation, Transid: x.Transid,
		Atime: x.Atime.Time(), Mtime: x.Mtime.Time(), Ctime: x.Ctime.Time(), Otime: x.Otime.Time(),
	}
}

// fileInfo implements fs.FileInfo.
type fileInfo struct {
	name string
	st   *Stat
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.st.Size }
func (fi *fileInfo) Mode() fs.FileMode  { return fileMode(fi.st.Mode) }
func (fi *fileInfo) ModTime() time.Time { return fi.st.Mtime }
func (fi *fileInfo) IsDir() bool        { return fi.st.Mode&item.SIFMT == item.SIFDIR }
func (fi *fileInfo) Sys() any           { return fi.st }

func (f *FS) statNode(name string, n ondisk.InodeRef) (*fileInfo, error) {
	x, err := f.inode(n)
	if err != nil {
		return nil, err
	}
	return &fileInfo{name: name, st: newStat(n, &x)}, nil
}
