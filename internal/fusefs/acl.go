package fusefs

import (
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Permissions as the kernel enforces them.
//
// The kernel checks every access itself (default_permissions) against the
// mode we report, which is the stored mode exactly: go-fuse would turn a
// mode of 000 into 0644/0755 (fs.Options.NullPermissions is set).
//
// POSIX ACLs go through FUSE_POSIX_ACL: the kernel reads the
// system.posix_acl_* xattrs to check access, validates an ACL before it
// sets one and strips S_ISGID from a chmod as setattr_prepare does; the
// daemon does the rest, as btrfs does in the kernel (fsops/acl.go): the
// mode follows an access ACL and a mode-equivalent ACL is not stored, chmod
// rewrites the ACL, new inodes inherit their directory's default ACL. Two
// things the kernel tells only in fields go-fuse's node API drops:
//   - FUSE_DONT_MASK: the kernel sends the mode of a create unmasked with
//     the umask beside it, which applies only when the directory has no
//     default ACL (posix_acl_create);
//   - FUSE_SETXATTR_EXT: SETXATTR_ACL_KILL_SGID says the caller may not
//     keep S_ISGID when its ACL sets the mode (posix_acl_update_mode).
// rawACL, a thin layer over go-fuse's raw filesystem, carries both into the
// node calls: the umask in the mode's bits above the file type (umaskOf),
// the kill flag as fsops.XattrACLKillSGID in the setxattr flags.

// mountFS mounts root at dir as fs.Mount does, with the options above.
func mountFS(dir string, root fs.InodeEmbedder, o *fs.Options) (*fuse.Server, error) {
	o.NullPermissions = true
	o.MountOptions.EnableAcl = true
	o.MountOptions.ExtraCapabilities |= fuse.CAP_DONT_MASK | fuse.CAP_SETXATTR_EXT
	raw := &rawACL{RawFileSystem: fs.NewNodeFS(root, o)}
	if n, ok := root.(*Node); ok && n.m.rw != nil {
		// killpriv.go
		o.MountOptions.ExtraCapabilities |= fuse.CAP_HANDLE_KILLPRIV_V2
		raw.fsys = n.m
	}
	server, err := fuse.NewServer(raw, dir, &o.MountOptions)
	if err != nil {
		return nil, err
	}
	go server.Serve()
	if err := server.WaitMount(); err != nil {
		return nil, err
	}
	return server, nil
}

// Mode bits carrying the caller's umask from rawACL to the node.
const (
	umaskShift = 16
	umaskValid = 1 << 31
)

// withUmask packs umask into mode.
func withUmask(mode, umask uint32) uint32 {
	return mode&0xffff | (umask&0o777)<<umaskShift | umaskValid
}

// umaskOf unpacks what withUmask packed: the mode and the umask (0 when the
// request carried none).
func umaskOf(mode uint32) (uint32, uint32) {
	if mode&umaskValid == 0 {
		return mode & 0xffff, 0
	}
	return mode & 0xffff, mode >> umaskShift & 0o777
}

// rawACL passes what the node API lacks (see above).
type rawACL struct {
	fuse.RawFileSystem
	// setxattrExt: the kernel sends SetXAttrFlags (FUSE_SETXATTR_EXT was
	// negotiated); without it the field is not in the request.
	setxattrExt bool
	// fsys drops set-ID bits where the kernel asks (killpriv.go): set
	// when FUSE_HANDLE_KILLPRIV_V2 was negotiated.
	fsys *fsys
}

func (r *rawACL) Init(s *fuse.Server) {
	in := s.KernelSettings()
	r.setxattrExt = in.Flags64()&fuse.CAP_SETXATTR_EXT != 0
	if in.Flags64()&fuse.CAP_HANDLE_KILLPRIV_V2 == 0 {
		r.fsys = nil // the kernel drops the bits itself
	}
	r.RawFileSystem.Init(s)
}

func (r *rawACL) Create(cancel <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	// A CREATE makes a new file (an existing one is an OPEN, below): its
	// mode is the one asked for, set-ID bits included.
	return r.RawFileSystem.Create(cancel, in, name, out)
}

func (r *rawACL) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if r.fsys != nil && in.Mode&fuse.OPEN_KILL_SUIDGID != 0 {
		if st := r.fsys.killFor(in.NodeId); st != fuse.OK {
			return st
		}
	}
	return r.RawFileSystem.Open(cancel, in, out)
}

func (r *rawACL) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	if st := r.killForWrite(in); st != fuse.OK {
		return 0, st
	}
	return r.RawFileSystem.Write(cancel, in, data)
}

// Writev is what go-fuse calls for a WRITE (Write only when it answers
// ENOSYS).
func (r *rawACL) Writev(cancel <-chan struct{}, in *fuse.WriteIn, data [][]byte) (uint32, fuse.Status) {
	if st := r.killForWrite(in); st != fuse.OK {
		return 0, st
	}
	return r.RawFileSystem.Writev(cancel, in, data)
}

func (r *rawACL) killForWrite(in *fuse.WriteIn) fuse.Status {
	if r.fsys == nil || in.WriteFlags&fuse.WRITE_KILL_SUIDGID == 0 {
		return fuse.OK
	}
	return r.fsys.killFor(in.NodeId)
}

func (r *rawACL) SetAttr(cancel <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	if r.fsys != nil && in.Valid&fuse.FATTR_KILL_SUIDGID != 0 && in.Valid&fuse.FATTR_MODE == 0 {
		if st := r.fsys.killFor(in.NodeId); st != fuse.OK {
			return st
		}
	}
	return r.RawFileSystem.SetAttr(cancel, in, out)
}

func (r *rawACL) Tmpfile(cancel <-chan struct{}, in *fuse.CreateIn, out *fuse.CreateOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	return r.RawFileSystem.Tmpfile(cancel, in, out)
}

func (r *rawACL) Mkdir(cancel <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	return r.RawFileSystem.Mkdir(cancel, in, name, out)
}

func (r *rawACL) Mknod(cancel <-chan struct{}, in *fuse.MknodIn, name string, out *fuse.EntryOut) fuse.Status {
	in.Mode = withUmask(in.Mode, in.Umask)
	return r.RawFileSystem.Mknod(cancel, in, name, out)
}

func (r *rawACL) SetXAttr(cancel <-chan struct{}, in *fuse.SetXAttrIn, attr string, data []byte) fuse.Status {
	in.Flags &^= fsops.XattrACLKillSGID
	if r.setxattrExt && in.SetXAttrFlags&fuse.SETXATTR_ACL_KILL_SGID != 0 {
		in.Flags |= fsops.XattrACLKillSGID
	}
	return r.RawFileSystem.SetXAttr(cancel, in, attr, data)
}

// createMode is the mode of a new inode in n asked for with mode (umask
// packed in): the umask applies unless n has a default ACL, which then
// masks the mode instead (in fsops). mirrors posix_acl_create (umask part)
func (n *Node) createMode(mode uint32) (uint32, syscall.Errno) {
	mode, umask := umaskOf(mode)
	if umask == 0 || n.m.rw == nil {
		return mode, 0
	}
	has, err := n.m.rw.ops.HasDefaultACL(n.id)
	if err != nil {
		return 0, n.m.errnoOf("read default ACL of", n.id, err)
	}
	if !has {
		mode &^= umask
	}
	return mode, 0
}

// setxattrFlags turns the flags of a SETXATTR into fsops's.
func setxattrFlags(flags uint32) int {
	return int(flags & (fsops.XattrCreate | fsops.XattrReplace | fsops.XattrACLKillSGID))
}
