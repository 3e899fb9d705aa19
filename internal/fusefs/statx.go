package fusefs

import (
	"context"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

var _ = (fs.NodeStatxer)((*Node)(nil))

// Statx answers FUSE_STATX (kernels from 6.6 send it for statx(2) masks
// beyond the basic stats): the basic stats as Getattr gives them, the
// birth time from the inode's otime, and the attribute bits btrfs_getattr
// reports (append, compressed, immutable, nodump).
func (n *Node) Statx(ctx context.Context, f fs.FileHandle, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	a, err := n.m.getattr(n.id)
	if err != nil {
		return n.m.errnoOf("statx", n.id, err)
	}
	var fa fuse.Attr
	a.fill(&fa, n.m.ids.stable(n.id))
	sx := &out.Statx
	sx.Mask = unix.STATX_BASIC_STATS | unix.STATX_BTIME
	sx.Blksize = fa.Blksize
	sx.Nlink = fa.Nlink
	sx.Uid, sx.Gid = fa.Uid, fa.Gid
	sx.Mode = uint16(fa.Mode)
	sx.Ino = fa.Ino
	sx.Size = fa.Size
	sx.Blocks = fa.Blocks
	sx.Atime, sx.Mtime, sx.Ctime, sx.Btime = sxTime(a.Atime), sxTime(a.Mtime), sxTime(a.Ctime), sxTime(a.Btime)
	sx.RdevMajor, sx.RdevMinor = uint32(a.Rdev>>20), uint32(a.Rdev&0xfffff)
	for _, b := range []struct{ btrfs, attr uint64 }{
		{item.InodeAppend, unix.STATX_ATTR_APPEND}, {item.InodeCompress, unix.STATX_ATTR_COMPRESSED},
		{item.InodeImmutable, unix.STATX_ATTR_IMMUTABLE}, {item.InodeNoDump, unix.STATX_ATTR_NODUMP},
	} {
		sx.AttributesMask |= b.attr
		if a.Flags&b.btrfs != 0 {
			sx.Attributes |= b.attr
		}
	}
	return 0
}

func sxTime(t time.Time) fuse.SxTime {
	return fuse.SxTime{Sec: uint64(t.Unix()), Nsec: uint32(t.Nanosecond())}
}
