package fusefs

import (
	"context"
	"encoding/binary"
	"os"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ = (fs.NodeOpener)((*Node)(nil))
	_ = (fs.NodeReader)((*Node)(nil))
	_ = (fs.NodeWriter)((*Node)(nil))
	_ = (fs.NodeFlusher)((*Node)(nil))
	_ = (fs.NodeReleaser)((*Node)(nil))
	_ = (fs.NodeFsyncer)((*Node)(nil))
	_ = (fs.NodeLseeker)((*Node)(nil))
	_ = (fs.NodeAllocater)((*Node)(nil))
	_ = (fs.NodeSetattrer)((*Node)(nil))
	_ = (fs.NodeCopyFileRanger)((*Node)(nil))
	_ = (fs.NodeIoctler)((*Node)(nil))
)

// fileHandle is an open regular file.
type fileHandle struct {
	n *Node
	// direct: opened with FOPEN_DIRECT_IO near a full filesystem (wbfail.go)
	direct bool
}

// Open opens a regular file. The kernel keeps its page cache across opens:
// every change to file data passes through it, or invalidates it.
func (n *Node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.m.rw == nil {
		if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
			return nil, 0, syscall.EROFS
		}
	} else if errno := n.mayOpen(flags); errno != 0 {
		return nil, 0, errno
	} else if err := n.m.rw.openExisting(n.id); err != nil {
		return nil, 0, n.m.errnoOf("open", n.id, err)
	}
	direct := n.m.rw.lowSpaceOpen(flags) // wbfail.go
	fh := &fileHandle{n: n, direct: direct != 0}
	if !n.m.keepCache(n.id, flags) {
		return fh, direct, 0 // the next read must reach us (atime.go)
	}
	return fh, fuse.FOPEN_KEEP_CACHE | direct, 0
}

// Read reads file data: on-disk bytes, with buffered writes over them.
func (n *Node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n.m.reqs.read(len(dest))
	if n.m.rw != nil {
		buf, a, err := n.m.rw.read(n.id, dest, off)
		if err != nil {
			return nil, n.m.errnoOf("read", n.id, err)
		}
		n.m.accessedAttr(n.id, a)
		return fuse.ReadResultVector([][]byte{buf}), 0
	}
	k, err := n.m.b.ReadAt(n.id, dest, off)
	if err != nil {
		return nil, n.m.errnoOf("read", n.id, err)
	}
	// a vector result is written with writev; ReadResultData would try
	// splice(2) through a pipe, which costs more than it saves here
	return fuse.ReadResultVector([][]byte{dest[:k]}), 0
}

// Write buffers data in the page cache.
func (n *Node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	r, errno := n.writable()
	if errno != 0 {
		return 0, errno
	}
	fh, _ := f.(*fileHandle)
	k, err := r.write(n.id, data, off, fh != nil && fh.direct)
	if err != nil {
		r.writeRefused(n.id)
		return 0, n.m.errnoOf("write", n.id, err)
	}
	return uint32(k), 0
}

// Flush would be called at each close(2). Data stays buffered until
// release and nothing is reported at close, so the first FLUSH answers
// ENOSYS: the kernel then stops sending it (fc->no_flush), and every
// close(2) saves a round trip to the daemon (it still writes its own
// cached pages back first in writeback_cache mode).
func (n *Node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return syscall.ENOSYS }

// Release is the last close of an open file description.
func (n *Node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	if _, ok := f.(*fileHandle); !ok || n.m.rw == nil {
		return 0
	}
	return n.m.errnoOf("release", n.id, n.m.rw.released(n.id))
}

// Fsync (and fdatasync) writes the file's buffered data back, then the
// log tree (no commit), or commits where the log cannot be used (fsops.Fsync).
func (n *Node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.m.rw == nil {
		return 0
	}
	return n.m.errnoOf("fsync", n.id, n.m.rw.fsync(n.id))
}

// Lseek answers SEEK_DATA and SEEK_HOLE (the kernel handles the others).
func (n *Node) Lseek(ctx context.Context, f fs.FileHandle, off uint64, whence uint32) (uint64, syscall.Errno) {
	const seekData, seekHole = 3, 4
	if whence != seekData && whence != seekHole {
		return 0, syscall.EINVAL
	}
	var pos int64
	var err error
	if n.m.rw != nil {
		n.m.kernelWriteback(n.id) // seekflush.go
		pos, err = n.m.rw.seekData(n.id, int64(off), whence == seekData)
	} else {
		pos, err = n.m.b.SeekData(n.id, int64(off), whence == seekData)
	}
	if err != nil {
		return 0, n.m.errnoOf("lseek", n.id, err)
	}
	return uint64(pos), 0
}

// Allocate is fallocate(2): preallocate, keep size, punch hole.
func (n *Node) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	r, errno := n.writable()
	if errno == 0 {
		// vfs_fallocate's IS_IMMUTABLE / IS_APPEND checks (iflags.go)
		errno = n.m.flagPerm(n.id, mode&^fallocKeepSize != 0)
	}
	if errno == 0 {
		errno = n.dropSgid(ctx, r) // fallocsgid.go
	}
	if errno != 0 {
		return errno
	}
	err := r.withRoom(func() error { return r.fallocate(n.id, off, size, mode) }) // metarsv.go
	return n.m.errnoOf("fallocate", n.id, err)
}

// Setattr changes mode, owner, size or times.
func (n *Node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.maySetattr(in)
	}
	if errno != 0 {
		return errno
	}
	var a fsops.SetAttr
	now := now()
	if m, ok := in.GetMode(); ok {
		a.Valid |= fsops.SetMode
		a.Mode = m
	}
	if uid, ok := in.GetUID(); ok {
		a.Valid |= fsops.SetUID
		a.UID = uid
	}
	if gid, ok := in.GetGID(); ok {
		a.Valid |= fsops.SetGID
		a.GID = gid
	}
	if sz, ok := in.GetSize(); ok {
		a.Valid |= fsops.SetSize
		a.Size = sz
	}
	if in.Valid&fuse.FATTR_ATIME_NOW != 0 {
		a.Valid |= fsops.SetAtime
		a.Atime = now
	} else if t, ok := in.GetATime(); ok {
		a.Valid |= fsops.SetAtime
		a.Atime = t
	}
	if in.Valid&fuse.FATTR_MTIME_NOW != 0 {
		a.Valid |= fsops.SetMtime
		a.Mtime = now
	} else if t, ok := in.GetMTime(); ok {
		a.Valid |= fsops.SetMtime
		a.Mtime = t
	}
	if t, ok := in.GetCTime(); ok {
		a.Valid |= fsops.SetCtime
		a.Ctime = t
	}
	if a.Valid != 0 {
		if err := r.withRoom(func() error { return r.setattr(n.id, a, in.Valid&fuse.FATTR_FH != 0) }); err != nil { // metarsv.go
			if isGone(err) && a.Valid&^(fsops.SetAtime|fsops.SetMtime|fsops.SetCtime) == 0 {
				return n.goneTimes(out)
			}
			return n.m.errnoOf("setattr", n.id, err)
		}
	}
	return n.Getattr(ctx, f, out)
}

// goneTimes answers the kernel's flush of the times it kept (writeback
// cache: fuse_flush_times at its writeback of the inode) for a file that
// was deleted meanwhile (unlinked and closed: the daemon dropped it). The
// kernel's btrfs has nothing to fail there; an error here would reach
// syncfs(2) and sync(1) as ENOENT. The attributes are those of a deleted
// file of its type, which the kernel is about to evict.
func (n *Node) goneTimes(out *fuse.AttrOut) syscall.Errno {
	out.Mode = n.StableAttr().Mode & syscall.S_IFMT
	out.Ino = n.StableAttr().Ino
	out.Nlink = 0
	return 0
}

// CopyFileRange is copy_file_range(2): a reflink when the ranges allow
// one (cp --reflink=auto lands here), else a buffered copy.
func (n *Node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	r, errno := n.writable()
	if errno != 0 {
		return 0, errno
	}
	dst, ok := out.Operations().(*Node)
	if !ok || flags != 0 {
		return 0, syscall.EINVAL
	}
	if errno := dst.dropSgid(ctx, r); errno != 0 { // fallocsgid.go
		return 0, errno
	}
	if errno := n.m.flagPerm(dst.id, false); errno != 0 {
		return 0, errno // generic_copy_file_checks: IS_IMMUTABLE(inode_out) (generic/553)
	}
	var done uint64
	err := r.withRoom(func() (err error) { // metarsv.go
		done, err = r.copyRange(n.id, offIn, dst.id, offOut, length)
		return err
	})
	if err != nil {
		return 0, n.m.errnoOf("copy_file_range", n.id, err)
	}
	return uint32(done), 0
}

// ioctl numbers this filesystem answers.
const (
	btrfsIocSync  = 0x9408     // BTRFS_IOC_SYNC, _IO(0x94, 8): `btrfs filesystem sync`
	fsIocGetflags = 0x80086601 // FS_IOC_GETFLAGS (lsattr)
	fsIocSetflags = 0x40086602 // FS_IOC_SETFLAGS (chattr)
	// FS_IOC_FSGETXATTR / FSSETXATTR (struct fsxattr, 28 bytes): the
	// kernel's FUSE asks these first when it reads an inode's flags for
	// chattr, and xfs_io's chattr uses them.
	fsIocFsgetxattr = 0x801c581f
	fsIocFssetxattr = 0x401c5820
)

// FS_XFLAG_* bits and the btrfs inode flags they stand for. mirrors
// btrfs_fileattr_get
var fsXflags = []struct{ x, btrfs uint64 }{
	{0x00000008, item.InodeImmutable},
	{0x00000010, item.InodeAppend},
	{0x00000020, item.InodeSync},
	{0x00000040, item.InodeNoAtime},
	{0x00000080, item.InodeNoDump},
}

// FS_*_FL bits and the btrfs inode flags they stand for. mirrors btrfs_inode_flags_to_fsflags
var fsFlags = []struct{ fs, btrfs uint64 }{
	{0x00000008, item.InodeSync},
	{0x00000010, item.InodeImmutable},
	{0x00000020, item.InodeAppend},
	{0x00000040, item.InodeNoDump},
	{0x00000080, item.InodeNoAtime},
	{0x00010000, item.InodeDirSync},
	{0x00800000, item.InodeNoDataCow},
	{0x00000400, item.InodeNoCompress},
	{0x00000004, item.InodeCompress},
}

// Ioctl answers BTRFS_IOC_SYNC (write everything back and commit) and
// FS_IOC_GETFLAGS/SETFLAGS. FICLONE and FICLONERANGE never get here: the
// kernel's VFS takes them and FUSE has no remap_file_range, so use
// copy_file_range (cp --reflink=auto) for reflinks.
func (n *Node) Ioctl(ctx context.Context, f fs.FileHandle, cmd uint32, arg uint64, input []byte, output []byte) (int32, syscall.Errno) {
	switch cmd {
	case btrfsIocSync:
		if n.m.rw == nil {
			return 0, 0
		}
		return 0, n.m.errnoOf("sync", n.id, n.m.rw.syncWithKernel())
	case gobtrfsIocRemount:
		if len(input) < 8 {
			return 0, syscall.EINVAL
		}
		if uid, _ := callerOwner(ctx); uid != 0 && uid != uint32(os.Getuid()) {
			return 0, syscall.EPERM // only who may remount (root, the mount's owner)
		}
		return 0, n.m.errnoOf("remount", n.id, n.m.remounted(binary.NativeEndian.Uint64(input)))
	case fsIocGetflags:
		fl, err := n.m.inodeFlags(n.id)
		if err != nil {
			return 0, n.m.errnoOf("getflags", n.id, err)
		}
		var v uint32
		for _, m := range fsFlags {
			if fl&m.btrfs != 0 {
				v |= uint32(m.fs)
			}
		}
		if len(output) >= 4 {
			binary.NativeEndian.PutUint32(output, v)
		}
		return 0, 0
	case fsIocFsgetxattr:
		fl, err := n.m.inodeFlags(n.id)
		if err != nil {
			return 0, n.m.errnoOf("fsgetxattr", n.id, err)
		}
		var v uint32
		for _, m := range fsXflags {
			if fl&m.btrfs != 0 {
				v |= uint32(m.x)
			}
		}
		if len(output) >= 28 {
			clear(output[:28])
			binary.NativeEndian.PutUint32(output, v)
		}
		return 0, 0
	case fsIocFssetxattr:
		r, errno := n.writable()
		if errno != 0 {
			return 0, errno
		}
		if len(input) < 28 {
			return 0, syscall.EINVAL
		}
		v := uint64(binary.NativeEndian.Uint32(input))
		fl, err := n.m.inodeFlags(n.id)
		if err != nil {
			return 0, n.m.errnoOf("fssetxattr", n.id, err)
		}
		for _, m := range fsXflags {
			fl &^= m.btrfs
			if v&m.x != 0 {
				fl |= m.btrfs
				v &^= m.x
			}
		}
		if v != 0 {
			return 0, syscall.EOPNOTSUPP
		}
		return 0, n.m.errnoOf("fssetxattr", n.id, n.setFlags(r, fl))
	case fsIocSetflags:
		r, errno := n.writable()
		if errno != 0 {
			return 0, errno
		}
		if len(input) < 4 {
			return 0, syscall.EINVAL
		}
		v := uint64(binary.NativeEndian.Uint32(input))
		var fl uint64
		for _, m := range fsFlags {
			if v&m.fs != 0 {
				fl |= m.btrfs
				v &^= m.fs
			}
		}
		if v != 0 {
			return 0, syscall.EOPNOTSUPP
		}
		return 0, n.m.errnoOf("setflags", n.id, n.setFlags(r, fl))
	}
	return 0, n.btrfsIoctl(ctx, cmd, input, output) // btrfsioctl.go
}

// setFlags sets n's inode flags; the kernel's cached ctime goes (generic/277).
func (n *Node) setFlags(r *rwState, fl uint64) error {
	err := r.setFlags(n.id, fl)
	if err == nil {
		n.m.changedAttr(n.id)
		r.kernelCtimeStale(n.id) // ctimestale.go
	}
	return err
}

// setFlags sets id's inode flags with its buffered data written back
// first: whether NODATACOW may change depends on the size the caller sees.
func (r *rwState) setFlags(id ondisk.InodeRef, fl uint64) error {
	return r.withData(id, func() error {
		_, err := r.ops.Setattr(id, fsops.SetAttr{Valid: fsops.SetFlags, Flags: fl})
		return err
	})
}

// inodeFlags returns the BTRFS_INODE_* flags of id.
func (m *fsys) inodeFlags(id ondisk.InodeRef) (uint64, error) {
	a, err := m.b.Getattr(id)
	return a.Flags, err
}
