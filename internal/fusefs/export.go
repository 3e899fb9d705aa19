package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// File handles (name_to_handle_at, open_by_handle_at, NFS re-export).
// The FUSE node ID of an inode is its st_ino (fs.Options.ExternalNodeID:
// the inoMap number, stable for the mount), and its generation is the
// inode's btrfs generation. With EXPORT_SUPPORT the kernel encodes both in
// a handle; when the inode has left its cache it asks LOOKUP(node ID, ".")
// (LookupNode, answered from the trees) and, to reconnect a directory,
// LOOKUP(node ID, "..") (LookupParent). A deleted inode gives ESTALE, and
// a reused inode number a new generation the kernel tells apart.

var (
	_ = (fs.NodeLookupNoder)((*Node)(nil))
	_ = (fs.NodeLookupParenter)((*Node)(nil))
)

// LookupNode finds the inode of a FUSE node ID (called on the root).
func (n *Node) LookupNode(ctx context.Context, nodeID uint64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	id, ok := n.m.ids.lookup(nodeID)
	if !ok {
		return nil, syscall.ESTALE
	}
	if id == n.m.b.Root() {
		return n.Root(), 0
	}
	a, err := n.m.getattr(id)
	if err != nil || a.Nlink == 0 {
		return nil, syscall.ESTALE
	}
	if n.m.rw != nil && a.Mode&syscall.S_IFMT == syscall.S_IFREG {
		n.m.rw.cache.Get(id)
	}
	a.fill(&out.Attr, nodeID)
	return n.NewInode(ctx, &Node{m: n.m, id: id}, n.m.stableAttr(id, &a)), 0
}

// LookupParent finds the directory holding directory n and n's name in it.
func (n *Node) LookupParent(ctx context.Context, out *fuse.EntryOut) (*fs.Inode, string, syscall.Errno) {
	r := n.m.rw
	if r == nil {
		return nil, "", syscall.ESTALE // the read side has no parent walk
	}
	p, err := r.ops.Parent(n.id)
	if err != nil {
		return nil, "", syscall.ESTALE
	}
	pid := p
	name := ""
	err = n.m.b.ReadDir(pid, 0, func(e dirent) bool {
		if e.ID == n.id {
			name = e.Name
			return false
		}
		return true
	})
	if err != nil || name == "" {
		return nil, "", syscall.ESTALE
	}
	a, err := n.m.getattr(pid)
	if err != nil {
		return nil, "", syscall.ESTALE
	}
	a.fill(&out.Attr, n.m.ids.stable(pid))
	if pid == n.m.b.Root() {
		return n.Root(), name, 0
	}
	return n.NewInode(ctx, &Node{m: n.m, id: pid}, n.m.stableAttr(pid, &a)), name, 0
}
