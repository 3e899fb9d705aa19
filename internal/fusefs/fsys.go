package fusefs

import (
	"context"
	"log"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// fsys is one mounted filesystem: the backend, the write state of a
// read-write mount, and the inode number map.
type fsys struct {
	b    backend
	rw   *rwState // nil on a read-only mount
	ids  *inoMap
	log  *log.Logger
	opts Options
	// atime is the live access time rule (atimeRule); frozen is set while
	// a read-write mount is remounted read-only (remount.go).
	atime  atomic.Uint32
	frozen atomic.Bool

	// mountpoint, its st_dev once known, and the server once mounted
	// (btrfsioctl.go; syncWithKernel opens the mount point)
	mountpoint string
	dev        atomic.Uint64
	server     atomic.Pointer[fuse.Server]

	reqs reqCounters // RequestStats

	// image is the file (or block device) the mount serves, for a second
	// mount that joins it (join.go)
	image blockdev.FileID

	// dropping: ondisk.InodeRef -> struct{}, inodes the kernel was asked
	// to forget and has not yet (dropKernelInode retries; OnForget ends it)
	dropping sync.Map
}

// nameMax is the longest name btrfs stores (BTRFS_NAME_LEN).
const nameMax = 255

// Node is one inode of the mount.
type Node struct {
	fs.Inode
	m  *fsys
	id ondisk.InodeRef
}

// stableAttr is the identity go-fuse keeps for id.
func (m *fsys) stableAttr(id ondisk.InodeRef, a *attr) fs.StableAttr {
	return fs.StableAttr{Mode: a.Mode & syscall.S_IFMT, Ino: m.ids.stable(id), Gen: a.Gen}
}

// newChild makes (or finds) the node of id below parent and fills out.
// A regular file's node is also an entry in the page cache for as long as
// the kernel keeps the inode (a clean cached inode: never on the writeback
// list, never visited by sync).
func (m *fsys) newChild(ctx context.Context, parent *Node, id ondisk.InodeRef, a *attr, out *fuse.EntryOut) *fs.Inode {
	a.fill(&out.Attr, m.ids.stable(id))
	if m.rw != nil && a.Mode&syscall.S_IFMT == syscall.S_IFREG {
		m.rw.cache.Get(id)
	}
	return parent.NewInode(ctx, &Node{m: m, id: id}, m.stableAttr(id, a))
}

// getattr returns id's attributes, with buffered writes counted.
func (m *fsys) getattr(id ondisk.InodeRef) (attr, error) {
	if m.rw != nil {
		return m.rw.getattr(id)
	}
	return m.b.Getattr(id)
}

// callerOwner is the uid and gid of the process making the request.
func callerOwner(ctx context.Context) (uint32, uint32) {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Uid, c.Gid
	}
	return 0, 0
}
