package fusefs

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// The btrfs ioctls a FUSE daemon can answer.
//
// A FUSE filesystem gets "restricted" ioctls only: the kernel copies
// _IOC_SIZE(cmd) bytes from the caller when the command is _IOW, and back
// when it is _IOR, and nothing that a pointer inside the argument points
// to. So the commands of fixed-size structs reach us: subvolume create,
// snapshot and delete (struct btrfs_ioctl_vol_args(_v2), 4096 bytes; the
// snapshot source is a file descriptor of the caller, which the daemon
// opens as /proc/PID/fd/N), the subvolume flags (read-only), the default
// subvolume, INO_LOOKUP (subvolume ID and path of an inode), FS_INFO,
// GET_FEATURES, the label and the syncs. Those that carry pointers
// (qgroup inherit, TREE_SEARCH_V2 buffers, send, balance progress) and
// the tree-search family (answered from the kernel's in-memory trees)
// are ENOTTY, as on a filesystem that is not btrfs.
//
// The btrfs tool refuses most subvolume commands before any ioctl:
// btrfs_open_dir and btrfs_util_is_subvolume want statfs f_type ==
// BTRFS_SUPER_MAGIC, and the kernel's FUSE always reports FUSE_SUPER_MAGIC.
// Reached from the tool: `filesystem sync`, `filesystem label`, `property
// get/set` (ro of the mounted subvolume's root, label, compression) and
// `subvolume set-default ID PATH`.
const (
	btrfsIocSnapCreate     = 0x50009401 // _IOW(0x94, 1, struct btrfs_ioctl_vol_args)
	btrfsIocSubvolCreate   = 0x5000940e // _IOW(0x94, 14, struct btrfs_ioctl_vol_args)
	btrfsIocSnapDestroy    = 0x5000940f // _IOW(0x94, 15, struct btrfs_ioctl_vol_args)
	btrfsIocInoLookup      = 0xd0009412 // _IOWR(0x94, 18, struct btrfs_ioctl_ino_lookup_args)
	btrfsIocDefaultSubvol  = 0x40089413 // _IOW(0x94, 19, __u64)
	btrfsIocWaitSync       = 0x40089416 // _IOW(0x94, 22, __u64)
	btrfsIocSnapCreateV2   = 0x50009417 // _IOW(0x94, 23, struct btrfs_ioctl_vol_args_v2)
	btrfsIocStartSync      = 0x80089418 // _IOR(0x94, 24, __u64)
	btrfsIocSubvolCreateV2 = 0x50009418 // _IOW(0x94, 24, struct btrfs_ioctl_vol_args_v2)
	btrfsIocSubvolGetflags = 0x80089419 // _IOR(0x94, 25, __u64)
	btrfsIocSubvolSetflags = 0x4008941a // _IOW(0x94, 26, __u64)
	btrfsIocFsInfo         = 0x8400941f // _IOR(0x94, 31, struct btrfs_ioctl_fs_info_args)
	btrfsIocGetFslabel     = 0x81009431 // _IOR(0x94, 49, char[256]), also FS_IOC_GETFSLABEL
	btrfsIocSetFslabel     = 0x41009432 // _IOW(0x94, 50, char[256]), also FS_IOC_SETFSLABEL
	btrfsIocGetFeatures    = 0x80189439 // _IOR(0x94, 57, struct btrfs_ioctl_feature_flags)
	btrfsIocSnapDestroyV2  = 0x5000943f // _IOW(0x94, 63, struct btrfs_ioctl_vol_args_v2)
)

// Layout of the argument structs (uapi/linux/btrfs.h).
const (
	volArgsName      = 8    // btrfs_ioctl_vol_args: __s64 fd; char name[4088]
	volArgsV2Flags   = 16   // btrfs_ioctl_vol_args_v2: fd, transid, flags
	volArgsV2Name    = 56   // after the 32-byte union of size/qgroup_inherit
	volArgsSize      = 4096 // both
	inoLookupName    = 16   // btrfs_ioctl_ino_lookup_args: treeid, objectid, name[4080]
	inoLookupSize    = 4096
	fsInfoSize       = 1024
	subvolRdonly     = 1 << 1 // BTRFS_SUBVOL_RDONLY
	subvolQgroup     = 1 << 2 // BTRFS_SUBVOL_QGROUP_INHERIT
	subvolSpecByID   = 1 << 4 // BTRFS_SUBVOL_SPEC_BY_ID
	fsInfoCsumInfo   = 1 << 0 // BTRFS_FS_INFO_FLAG_CSUM_INFO
	fsInfoGeneration = 1 << 1 // BTRFS_FS_INFO_FLAG_GENERATION
	fsInfoMetaUUID   = 1 << 2 // BTRFS_FS_INFO_FLAG_METADATA_UUID
	pageSize         = 4096
)

// btrfsIoctl answers the btrfs ioctls above on n; ENOTTY for others.
func (n *Node) btrfsIoctl(ctx context.Context, cmd uint32, in, out []byte) syscall.Errno {
	switch cmd {
	case btrfsIocFsInfo:
		return n.fsInfo(out)
	case btrfsIocGetFeatures:
		sb, errno := n.superblock()
		if errno == 0 && len(out) >= 24 {
			incompat := sb.IncompatFlags
			if sb.NodeSize > pageSize {
				// the kernel sets it when it mounts such a filesystem (open_ctree)
				incompat |= ondisk.IncompatBigMetadata
			}
			binary.NativeEndian.PutUint64(out[0:], sb.CompatFlags)
			binary.NativeEndian.PutUint64(out[8:], sb.CompatROFlags)
			binary.NativeEndian.PutUint64(out[16:], incompat)
		}
		return errno
	case btrfsIocGetFslabel:
		sb, errno := n.superblock()
		if errno == 0 && len(out) >= ondisk.LabelSize {
			copy(out, sb.Label[:])
			out[ondisk.LabelSize-1] = 0
		}
		return errno
	case btrfsIocSetFslabel:
		return n.setLabel(ctx, in)
	case btrfsIocSubvolGetflags:
		return n.subvolGetflags(out)
	case btrfsIocSubvolSetflags:
		return n.subvolSetflags(ctx, in)
	case btrfsIocInoLookup:
		return n.inoLookup(ctx, in, out)
	case btrfsIocDefaultSubvol:
		return n.defaultSubvol(ctx, in)
	case btrfsIocSubvolCreate, btrfsIocSubvolCreateV2, btrfsIocSnapCreate, btrfsIocSnapCreateV2:
		return n.subvolCreate(ctx, cmd, in)
	case btrfsIocSnapDestroy, btrfsIocSnapDestroyV2:
		return n.subvolDestroy(ctx, cmd, in)
	case btrfsIocStartSync:
		if n.m.rw != nil && !n.m.frozen.Load() {
			if errno := n.m.errnoOf("start sync", n.id, n.m.rw.syncAll()); errno != 0 {
				return errno
			}
		}
		sb, errno := n.superblock()
		if errno == 0 && len(out) >= 8 {
			binary.NativeEndian.PutUint64(out, uint64(sb.Generation))
		}
		return errno
	case btrfsIocWaitSync:
		return 0 // START_SYNC has committed already
	case gobtrfsIocSubvolPath:
		return n.subvolPath(ctx, in, out) // join.go
	case fsIocFitrim:
		return n.fitrim(ctx, in, out) // fitrim.go
	}
	return syscall.ENOTTY
}

// superblock is the superblock as the kernel holds it: the running
// transaction's on a read-write mount.
func (n *Node) superblock() (ondisk.Superblock, syscall.Errno) {
	if n.m.rw != nil {
		return n.m.rw.ops.Superblock(), 0
	}
	if ro, ok := n.m.b.(*roBackend); ok {
		return *ro.e.Info().Super, 0
	}
	return ondisk.Superblock{}, syscall.ENOTTY
}

// fsInfo fills struct btrfs_ioctl_fs_info_args. The caller's flags do not
// reach us (the command is _IOR), so every optional part is filled and
// flagged. mirrors btrfs_ioctl_fs_info
func (n *Node) fsInfo(out []byte) syscall.Errno {
	sb, errno := n.superblock()
	if errno != 0 || len(out) < fsInfoSize {
		return errno
	}
	clear(out[:fsInfoSize])
	le := binary.NativeEndian
	le.PutUint64(out[0:], uint64(sb.DevItem.DevID)) // max_id: one device
	le.PutUint64(out[8:], sb.NumDevices)
	copy(out[16:32], sb.FSID[:])
	le.PutUint32(out[32:], sb.NodeSize)
	le.PutUint32(out[36:], sb.SectorSize)
	le.PutUint32(out[40:], sb.SectorSize) // clone_alignment
	le.PutUint16(out[44:], sb.CsumType)
	le.PutUint16(out[46:], uint16(csum.Type(sb.CsumType).Size()))
	le.PutUint64(out[48:], fsInfoCsumInfo|fsInfoGeneration|fsInfoMetaUUID)
	le.PutUint64(out[56:], uint64(sb.Generation))
	mu := sb.MetadataFSID()
	copy(out[64:80], mu[:])
	return 0
}

// capable is the kernel's capable(CAP_SYS_ADMIN) as far as the daemon can
// tell: the caller is root.
func capable(ctx context.Context) bool {
	uid, _ := callerOwner(ctx)
	return uid == 0
}

// ownerOrCapable is inode_owner_or_capable.
func (n *Node) ownerOrCapable(ctx context.Context, a *attr) bool {
	uid, _ := callerOwner(ctx)
	return uid == 0 || uid == a.UID
}

// mayCreateIn is the kernel's permission check for a new name in dir
// (write and search), from the owner, group and other bits for the
// caller's uid and primary gid (supplementary groups do not reach a FUSE
// daemon); root passes.
func (n *Node) mayCreateIn(ctx context.Context) syscall.Errno {
	uid, gid := callerOwner(ctx)
	if uid == 0 {
		return 0
	}
	a, err := n.m.getattr(n.id)
	if err != nil {
		return n.m.errnoOf("permission", n.id, err)
	}
	bits := a.Mode & 0o7
	switch {
	case uid == a.UID:
		bits = a.Mode >> 6 & 0o7
	case gid == a.GID:
		bits = a.Mode >> 3 & 0o7
	}
	if bits&0o3 != 0o3 {
		return syscall.EACCES
	}
	return 0
}

func (n *Node) setLabel(ctx context.Context, in []byte) syscall.Errno {
	if !capable(ctx) {
		return syscall.EPERM
	}
	r, errno := n.writable()
	if errno != 0 {
		return errno
	}
	if len(in) < ondisk.LabelSize {
		return syscall.EINVAL
	}
	l := bytes.IndexByte(in[:ondisk.LabelSize], 0)
	if l < 0 {
		return syscall.EINVAL // as the kernel: no room for the terminating NUL
	}
	return n.m.errnoOf("set label", n.id, r.ops.SetLabel(string(in[:l])))
}

// subvolRoot refuses inodes that are not a subvolume's root directory.
func (n *Node) subvolRoot() syscall.Errno {
	if n.id.Ino != fsops.RootDirIno {
		return syscall.EINVAL
	}
	return 0
}

func (n *Node) subvolReadonly() (bool, syscall.Errno) {
	if n.m.rw != nil {
		ro, err := n.m.rw.ops.SubvolumeReadonly(n.id.Root)
		return ro, n.m.errnoOf("subvolume flags", n.id, err)
	}
	ro, ok := n.m.b.(*roBackend)
	if !ok {
		return false, syscall.ENOTTY
	}
	subs, err := ro.e.Subvolumes()
	if err != nil {
		return false, n.m.errnoOf("subvolume flags", n.id, err)
	}
	for _, s := range subs {
		if ondisk.ObjectID(s.ID) == n.id.Root {
			return s.ReadOnly, 0
		}
	}
	return false, 0
}

// subvolGetflags is BTRFS_IOC_SUBVOL_GETFLAGS. mirrors btrfs_ioctl_subvol_getflags
func (n *Node) subvolGetflags(out []byte) syscall.Errno {
	if errno := n.subvolRoot(); errno != 0 {
		return errno
	}
	ro, errno := n.subvolReadonly()
	if errno == 0 && len(out) >= 8 {
		var fl uint64
		if ro {
			fl = subvolRdonly
		}
		binary.NativeEndian.PutUint64(out, fl)
	}
	return errno
}

// subvolSetflags is BTRFS_IOC_SUBVOL_SETFLAGS: read-only on or off.
// mirrors btrfs_ioctl_subvol_setflags
func (n *Node) subvolSetflags(ctx context.Context, in []byte) syscall.Errno {
	a, err := n.m.getattr(n.id)
	if err != nil {
		return n.m.errnoOf("subvolume flags", n.id, err)
	}
	if !n.ownerOrCapable(ctx, &a) {
		return syscall.EPERM // before EROFS, as the kernel checks
	}
	r, errno := n.writable()
	if errno != 0 {
		return errno
	}
	if errno := n.subvolRoot(); errno != 0 {
		return errno
	}
	if len(in) < 8 {
		return syscall.EINVAL
	}
	fl := binary.NativeEndian.Uint64(in)
	if fl&^subvolRdonly != 0 {
		return syscall.EOPNOTSUPP
	}
	ro := fl&subvolRdonly != 0
	if ro {
		// what is buffered for the subvolume goes in before it freezes
		if err := r.flushAll(); err != nil {
			return n.m.errnoOf("subvolume flags", n.id, err)
		}
	}
	return n.m.errnoOf("subvolume flags", n.id, r.ops.SetSubvolumeReadonly(n.id.Root, ro))
}

// inoLookup is BTRFS_IOC_INO_LOOKUP: the subvolume ID of n (treeid 0) and
// the path of inode objectid in a tree, "dir/name/" as the kernel writes it.
// mirrors btrfs_ioctl_ino_lookup
func (n *Node) inoLookup(ctx context.Context, in, out []byte) syscall.Errno {
	if len(in) < inoLookupSize || len(out) < inoLookupSize {
		return syscall.EINVAL
	}
	copy(out, in[:inoLookupSize])
	le := binary.NativeEndian
	tree, obj := ondisk.ObjectID(le.Uint64(out[0:])), ondisk.ObjectID(le.Uint64(out[8:]))
	if tree == 0 {
		tree = n.id.Root
		le.PutUint64(out[0:], uint64(tree))
	}
	if obj == fsops.RootDirIno {
		out[inoLookupName] = 0
		return 0
	}
	if !capable(ctx) {
		return syscall.EPERM
	}
	if n.m.rw == nil {
		return syscall.EOPNOTSUPP
	}
	id := ondisk.InodeRef{Root: tree, Ino: obj}
	if _, err := n.m.rw.ops.Stat(id); err != nil {
		return n.m.errnoOf("ino lookup", id, err)
	}
	p, err := n.m.rw.ops.InodePath(id)
	if err != nil {
		return n.m.errnoOf("ino lookup", id, err)
	}
	p += "/"
	if len(p) >= inoLookupSize-inoLookupName {
		return syscall.ENAMETOOLONG
	}
	copy(out[inoLookupName:], p)
	out[inoLookupName+len(p)] = 0
	return 0
}

// defaultSubvol is BTRFS_IOC_DEFAULT_SUBVOL. mirrors btrfs_ioctl_default_subvol
func (n *Node) defaultSubvol(ctx context.Context, in []byte) syscall.Errno {
	if !capable(ctx) {
		return syscall.EPERM
	}
	r, errno := n.writable()
	if errno != 0 {
		return errno
	}
	if len(in) < 8 {
		return syscall.EINVAL
	}
	id := ondisk.ObjectID(binary.NativeEndian.Uint64(in))
	return n.m.errnoOf("default subvolume", n.id, r.ops.SetDefaultSubvolume(id))
}

// volName reads the NUL-terminated name of a vol_args(_v2) and checks it
// as the kernel does: a '/' is EINVAL, "." and ".." exist already, an
// empty name is EACCES (lookup_one_len's answer).
func volName(b []byte) (string, syscall.Errno) {
	l := bytes.IndexByte(b, 0)
	if l < 0 {
		l = len(b)
	}
	name := string(b[:l])
	switch {
	case bytes.IndexByte(b[:l], '/') >= 0:
		return "", syscall.EINVAL
	case name == "." || name == "..":
		return "", syscall.EEXIST
	case name == "":
		return "", syscall.EACCES
	}
	if len(name) > nameMax {
		return "", syscall.ENAMETOOLONG
	}
	return name, 0
}

// destroyName is volName for SNAP_DESTROY, whose answers for the special
// names differ from create's: ".." is EINVAL (btrfs_ioctl_snap_destroy
// refuses it before the lookup), "." EACCES (the lookup's).
func destroyName(b []byte) (string, syscall.Errno) {
	name, errno := volName(b)
	if errno == syscall.EEXIST {
		if bytes.HasPrefix(b, []byte("..\x00")) {
			return "", syscall.EINVAL
		}
		return "", syscall.EACCES
	}
	return name, errno
}

// subvolCreate is SUBVOL_CREATE(_V2) and SNAP_CREATE(_V2): a new subvolume
// or a snapshot of the subvolume whose root the caller's fd names, as name
// in the directory n. mirrors btrfs_ioctl_snap_create / __btrfs_ioctl_snap_create
func (n *Node) subvolCreate(ctx context.Context, cmd uint32, in []byte) syscall.Errno {
	r, errno := n.writable()
	if errno != 0 {
		return errno
	}
	if len(in) < volArgsSize {
		return syscall.EINVAL
	}
	v2 := cmd == btrfsIocSnapCreateV2 || cmd == btrfsIocSubvolCreateV2
	snap := cmd == btrfsIocSnapCreate || cmd == btrfsIocSnapCreateV2
	nameOff, flags := volArgsName, uint64(0)
	if v2 {
		nameOff, flags = volArgsV2Name, binary.NativeEndian.Uint64(in[volArgsV2Flags:])
		if flags&^(subvolRdonly|subvolQgroup) != 0 {
			return syscall.EOPNOTSUPP
		}
		if flags&subvolQgroup != 0 {
			return syscall.EOPNOTSUPP // the inherit struct is behind a pointer
		}
	}
	name, errno := volName(in[nameOff:volArgsSize])
	if errno == 0 {
		errno = n.checkNewName(name)
	}
	if errno == 0 {
		errno = n.mayCreateIn(ctx)
	}
	if errno != 0 {
		return errno
	}
	var src ondisk.InodeRef
	if snap {
		// resolved before nsMu: the stat of /proc/PID/fd/N and of the
		// mount point may come back to this daemon
		if src, errno = n.m.callerFile(ctx, int64(binary.NativeEndian.Uint64(in))); errno != 0 {
			return errno
		}
		if src.Ino != fsops.RootDirIno {
			return syscall.EINVAL
		}
		sa, err := n.m.getattr(src)
		if err != nil {
			return n.m.errnoOf("snapshot", src, err)
		}
		if !n.ownerOrCapable(ctx, &sa) {
			return syscall.EPERM
		}
		// the kernel writes the source's delalloc back before snapshotting
		// (with the pages the kernel holds in writeback cache mode)
		r.kernelPages()
		if err := r.flushAll(); err != nil {
			return n.m.errnoOf("snapshot", src, err)
		}
	}
	r.nsMu.Lock()
	var err error
	if snap {
		_, err = r.ops.Snapshot(src.Root, n.id, name, flags&subvolRdonly != 0)
	} else {
		uid, gid, mode := n.owner(ctx, syscall.S_IFDIR|0o755)
		_, err = r.ops.CreateSubvolume(n.id, name, mode&0o7777, uid, gid)
	}
	r.nsMu.Unlock()
	if err != nil {
		return n.m.errnoOf("create subvolume "+name+" in", n.id, err)
	}
	// after nsMu: the kernel's invalidation takes the directory's inode
	// lock, which a CREATE in it holds while it waits for nsMu
	n.m.changedEntry(n.id, name)
	return 0
}

// subvolDestroy is SNAP_DESTROY(_V2): delete the subvolume called name in
// n, or (v2, BTRFS_SUBVOL_SPEC_BY_ID) the one with that ID. A subvolume
// with files open is refused (EBUSY): its tree goes at once here, not when
// the last file closes. mirrors btrfs_ioctl_snap_destroy
func (n *Node) subvolDestroy(ctx context.Context, cmd uint32, in []byte) syscall.Errno {
	r, errno := n.writable()
	if errno != 0 {
		return errno
	}
	if len(in) < volArgsSize {
		return syscall.EINVAL
	}
	if !capable(ctx) { // user_subvol_rm_allowed is not honoured
		return syscall.EPERM
	}
	dir, name := n.id, ""
	if cmd == btrfsIocSnapDestroyV2 && binary.NativeEndian.Uint64(in[volArgsV2Flags:])&subvolSpecByID != 0 {
		id := ondisk.ObjectID(binary.NativeEndian.Uint64(in[volArgsV2Name:]))
		if id < ondisk.FirstFreeObjectID || id > ondisk.LastFreeObjectID {
			return syscall.EINVAL
		}
		d, nm, err := r.ops.SubvolumeLink(id)
		if err != nil {
			return n.m.errnoOf("delete subvolume", n.id, err)
		}
		dir, name = d, nm
	} else {
		nameOff := volArgsName
		if cmd == btrfsIocSnapDestroyV2 {
			nameOff = volArgsV2Name
		}
		nm, errno := destroyName(in[nameOff:volArgsSize])
		if errno != 0 {
			return errno
		}
		name = nm
	}
	if r.hidden(dir, name) {
		return syscall.ENOENT
	}
	if errno := r.destroySubvol(dir, name); errno != 0 {
		return errno
	}
	// after nsMu (as subvolCreate)
	n.m.changedEntry(dir, name)
	return 0
}

// destroySubvol deletes subvolume name in dir under nsMu.
func (r *rwState) destroySubvol(dir ondisk.InodeRef, name string) syscall.Errno {
	r.nsMu.Lock()
	defer r.nsMu.Unlock()
	child, _, err := r.Lookup(dir, name)
	if err != nil {
		return r.m.errnoOf("delete subvolume "+name+" in", dir, err)
	}
	if child.Ino != fsops.RootDirIno || child.Root == dir.Root {
		return syscall.EINVAL
	}
	if r.subvolInUse(child.Root) {
		return syscall.EBUSY
	}
	if err := r.ops.DeleteSubvolume(dir, name); err != nil {
		return r.m.errnoOf("delete subvolume "+name+" in", dir, err)
	}
	return 0
}

// subvolInUse reports whether a file of subvolume id is open.
func (r *rwState) subvolInUse(id ondisk.ObjectID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.open {
		if k.Root == id {
			return true
		}
	}
	return false
}

// changedEntry tells the kernel that name in dir changed behind its back
// (an ioctl made or removed it): it drops its cached dentry and dir's
// attributes. Node IDs are st_ino numbers (ExternalNodeID; the root is
// FUSE_ROOT_ID), so this works for a directory the kernel may not hold
// (ENOENT then, ignored).
func (m *fsys) changedEntry(dir ondisk.InodeRef, name string) {
	if srv := m.server.Load(); srv != nil {
		node := m.nodeID(dir)
		srv.EntryNotify(node, name)
		srv.InodeNotify(node, 0, 0)
	}
}

// changedAttr drops the kernel's cached attributes of id (an ioctl changed
// them: the kernel's FUSE does not refresh them after FS_IOC_SETFLAGS);
// its page cache stays.
func (m *fsys) changedAttr(id ondisk.InodeRef) {
	if srv := m.server.Load(); srv != nil {
		srv.InodeNotify(m.nodeID(id), -1, 0)
	}
}

// nodeID is the FUSE node ID of id.
func (m *fsys) nodeID(id ondisk.InodeRef) uint64 {
	if id == m.b.Root() {
		return fuse.FUSE_ROOT_ID
	}
	return m.ids.stable(id)
}

// callerFile resolves fd, a file descriptor of the calling process (the
// source of a snapshot), to an inode of this mount: EBADF when it is not
// open, EXDEV when it is on another filesystem.
func (m *fsys) callerFile(ctx context.Context, fd int64) (ondisk.InodeRef, syscall.Errno) {
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Pid == 0 || fd < 0 || fd > 1<<31 {
		return ondisk.InodeRef{}, syscall.EBADF
	}
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/fd/%d", c.Pid, fd), &st); err != nil {
		return ondisk.InodeRef{}, syscall.EBADF
	}
	dev, errno := m.ownDev()
	if errno != 0 {
		return ondisk.InodeRef{}, errno
	}
	if st.Dev != dev {
		return ondisk.InodeRef{}, syscall.EXDEV
	}
	id, ok := m.ids.lookup(st.Ino)
	if !ok {
		return ondisk.InodeRef{}, syscall.EBADF
	}
	return id, 0
}

// ownDev is this mount's st_dev, from a stat of the mount point.
func (m *fsys) ownDev() (uint64, syscall.Errno) {
	if d := m.dev.Load(); d != 0 {
		return d, 0
	}
	var st syscall.Stat_t
	if m.mountpoint == "" || syscall.Stat(m.mountpoint, &st) != nil {
		return 0, syscall.EXDEV
	}
	m.dev.Store(st.Dev)
	return st.Dev, 0
}
