package fusefs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

var (
	_ = (fs.NodeSetxattrer)((*Node)(nil))
	_ = (fs.NodeRemovexattrer)((*Node)(nil))
)

// Setxattr sets attribute name; flags XATTR_CREATE / XATTR_REPLACE, and the
// kernel's ACL_KILL_SGID as rawACL passes it (acl.go). mirrors btrfs_setxattr
func (n *Node) Setxattr(ctx context.Context, name string, data []byte, flags uint32) syscall.Errno {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.m.flagPerm(n.id, true)
	}
	if errno != 0 {
		return errno
	}
	r.noCaps.Delete(n.id)
	err := r.withRoom(func() error { return r.ops.SetXattr(n.id, name, data, setxattrFlags(flags)) }) // metarsv.go
	return n.m.errnoOf("setxattr "+name, n.id, err)
}

// Removexattr removes attribute name (ENODATA if unset).
func (n *Node) Removexattr(ctx context.Context, name string) syscall.Errno {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.m.flagPerm(n.id, true)
	}
	if errno != 0 {
		return errno
	}
	return n.m.errnoOf("removexattr "+name, n.id, r.ops.RemoveXattr(n.id, name))
}
