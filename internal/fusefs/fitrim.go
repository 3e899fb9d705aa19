package fusefs

import (
	"context"
	"encoding/binary"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// FITRIM (fstrim(8)) on the mount: the VFS passes it to the filesystem, so
// FUSE forwards it (struct fstrim_range, 24 bytes each way). The daemon
// writes back and commits first, so that space freed by recent deletes is
// free rather than pinned, then punches holes in the image file for the
// free space (txn.Engine.Trim): a sparse image shrinks on the host as a
// thin-provisioned disk does. Root only, as on the kernel (CAP_SYS_ADMIN).
// A read-only mount has the image open read-only and cannot discard
// (EROFS; kernel btrfs trims a read-only mount unless nologreplay).
const fsIocFitrim = 0xc0185879 // _IOWR('X', 121, struct fstrim_range)

func (n *Node) fitrim(ctx context.Context, in, out []byte) syscall.Errno {
	if !capable(ctx) {
		return syscall.EPERM
	}
	if len(in) < 24 || len(out) < 24 {
		return syscall.EINVAL
	}
	r := n.m.rw
	if r == nil || n.m.frozen.Load() {
		return syscall.EROFS
	}
	le := binary.NativeEndian
	tr := txn.TrimRange{Start: le.Uint64(in[0:]), Len: le.Uint64(in[8:]), MinLen: le.Uint64(in[16:])}
	if tr.Len < uint64(r.ops.SectorSize()) {
		return syscall.EINVAL // before the commit, as the kernel checks first
	}
	if errno := n.m.errnoOf("fitrim: sync", n.id, r.syncAll()); errno != 0 {
		return errno
	}
	done, err := r.ops.Trim(tr)
	if err != nil {
		return n.m.errnoOf("fitrim", n.id, err)
	}
	copy(out[:24], in[:24])
	le.PutUint64(out[8:], done)
	return 0
}
