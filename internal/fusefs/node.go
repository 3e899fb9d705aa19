package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

var (
	_ = (fs.NodeLookuper)((*Node)(nil))
	_ = (fs.NodeGetattrer)((*Node)(nil))
	_ = (fs.NodeReadlinker)((*Node)(nil))
	_ = (fs.NodeGetxattrer)((*Node)(nil))
	_ = (fs.NodeListxattrer)((*Node)(nil))
	_ = (fs.NodeStatfser)((*Node)(nil))
	_ = (fs.NodeOnForgetter)((*Node)(nil))
)

// Lookup finds name in directory n. mirrors btrfs_lookup
func (n *Node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if len(name) > nameMax {
		return nil, syscall.ENAMETOOLONG
	}
	if n.m.rw != nil && n.m.rw.hidden(n.id, name) {
		return nil, syscall.ENOENT
	}
	id, a, err := n.m.lookup(n.id, name)
	if err != nil {
		return nil, n.m.errnoOf("lookup "+name+" in", n.id, err)
	}
	return n.m.newChild(ctx, n, id, &a, out), 0
}

func (m *fsys) lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, attr, error) {
	if m.rw != nil {
		return m.rw.lookupOverlay(dir, name)
	}
	return m.b.Lookup(dir, name)
}

// Getattr reports n's attributes; on a read-write mount the size and times
// include writes still buffered.
func (n *Node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.m.reqs.getattrs.Add(1)
	a, err := n.m.getattr(n.id)
	if err != nil {
		return n.m.errnoOf("getattr", n.id, err)
	}
	a.fill(&out.Attr, n.m.ids.stable(n.id))
	return 0
}

// Readlink returns a symlink's target.
func (n *Node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	s, err := n.m.b.Readlink(n.id)
	if err != nil {
		return nil, n.m.errnoOf("readlink", n.id, err)
	}
	return []byte(s), 0
}

// Getxattr copies attribute name into dest, or reports its size when dest is empty.
func (n *Node) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	v, err := n.m.b.GetXattr(n.id, name)
	if err != nil {
		return 0, n.m.errnoOf("getxattr "+name, n.id, err)
	}
	if len(dest) == 0 {
		return uint32(len(v)), 0
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Listxattr writes the attribute names, each ending in NUL, into dest.
func (n *Node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	names, err := n.m.b.ListXattr(n.id)
	if err != nil {
		return 0, n.m.errnoOf("listxattr", n.id, err)
	}
	size := 0
	for _, s := range names {
		size += len(s) + 1
	}
	if len(dest) == 0 {
		return uint32(size), 0
	}
	if len(dest) < size {
		return uint32(size), syscall.ERANGE
	}
	off := 0
	for _, s := range names {
		off += copy(dest[off:], s)
		dest[off] = 0
		off++
	}
	return uint32(size), 0
}

// Statfs reports the filesystem's size and free space.
func (n *Node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	sf, err := n.m.statfs()
	if err != nil {
		return n.m.errnoOf("statfs", n.id, err)
	}
	bs := uint64(max(sf.BlockSize, 512))
	out.Bsize = uint32(bs)
	out.Frsize = uint32(bs)
	out.Blocks = sf.Total / bs
	out.Bfree = sf.Free / bs
	out.Bavail = sf.Avail / bs
	out.NameLen = nameMax
	return 0
}

func (m *fsys) statfs() (statfs, error) {
	if m.rw != nil {
		return m.rw.statfs()
	}
	return m.b.Statfs()
}

// OnForget drops what is kept for the inode once the kernel has forgotten
// it (its page cache entry stays while it holds dirty data).
func (n *Node) OnForget() {
	n.m.dropping.Delete(n.id)
	n.m.b.Forget(n.id)
	if n.m.rw != nil {
		n.m.rw.cache.Forget(n.id)
	}
}
