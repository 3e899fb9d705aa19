package fusefs

import (
	"context"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ = (fs.NodeCreater)((*Node)(nil))
	_ = (fs.NodeMknoder)((*Node)(nil))
	_ = (fs.NodeMkdirer)((*Node)(nil))
	_ = (fs.NodeSymlinker)((*Node)(nil))
	_ = (fs.NodeLinker)((*Node)(nil))
	_ = (fs.NodeUnlinker)((*Node)(nil))
	_ = (fs.NodeRmdirer)((*Node)(nil))
	_ = (fs.NodeRenamer)((*Node)(nil))
	_ = (fs.NodeTmpfiler)((*Node)(nil))
)

// writable returns the write state, or EROFS on a read-only mount.
func (n *Node) writable() (*rwState, syscall.Errno) {
	if n.m.rw == nil || n.m.frozen.Load() {
		return nil, syscall.EROFS
	}
	return n.m.rw, 0
}

// checkNewName refuses names btrfs cannot store and the hidden directory,
// and new names in an immutable directory (iflags.go).
func (n *Node) checkNewName(name string) syscall.Errno {
	if len(name) > nameMax {
		return syscall.ENAMETOOLONG
	}
	if n.m.rw != nil && n.m.rw.hidden(n.id, name) {
		return syscall.EPERM
	}
	return n.m.flagPerm(n.id, false)
}

// owner is the uid and gid of a new inode in n: the caller's, with the
// group of a set-group-ID directory. mirrors inode_init_owner
func (n *Node) owner(ctx context.Context, mode uint32) (uint32, uint32, uint32) {
	uid, gid := callerOwner(ctx)
	if a, err := n.m.b.Getattr(n.id); err == nil && a.Mode&syscall.S_ISGID != 0 {
		gid = a.GID
		if mode&syscall.S_IFMT == syscall.S_IFDIR {
			mode |= syscall.S_ISGID
		}
	}
	return uid, gid, mode
}

// entry fills out and returns the node of a new inode.
func (n *Node) entry(ctx context.Context, op string, f ondisk.InodeRef, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	id := f
	a, err := n.m.getattr(id)
	if err != nil {
		return nil, n.m.errnoOf(op, id, err)
	}
	return n.m.newChild(ctx, n, id, &a, out), 0
}

// Create makes and opens a regular file. mirrors btrfs_create
func (n *Node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.checkNewName(name)
	}
	if errno != 0 {
		return nil, nil, 0, errno
	}
	mode, errno = n.createMode(mode)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	uid, gid, mode := n.owner(ctx, mode&^syscall.S_IFMT|syscall.S_IFREG)
	r.nsMu.Lock()
	var f ondisk.InodeRef
	err := r.withRoom(func() (err error) { // metarsv.go
		f, err = r.ops.Create(n.id, name, mode, uid, gid, 0)
		return err
	})
	if err == nil {
		err = r.newFileFlags(f)
	}
	if err == nil {
		r.opened(f, false)
	}
	r.nsMu.Unlock()
	if err != nil {
		return nil, nil, 0, n.m.errnoOf("create "+name+" in", n.id, err)
	}
	ch, errno := n.entry(ctx, "create", f, out)
	if errno != 0 {
		r.released(f)
		return nil, nil, 0, errno
	}
	direct := r.lowSpaceOpen(flags) // wbfail.go
	return ch, &fileHandle{n: ch.Operations().(*Node), direct: direct != 0}, fuse.FOPEN_KEEP_CACHE | direct, 0
}

// Tmpfile makes an open file with no name (O_TMPFILE): an orphan of the
// engine until linkat gives it a name or it is closed.
func (n *Node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	r, errno := n.writable()
	if errno != 0 {
		return nil, nil, 0, errno
	}
	mode, errno = n.createMode(mode)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	uid, gid, mode := n.owner(ctx, mode&^syscall.S_IFMT|syscall.S_IFREG)
	var f ondisk.InodeRef
	err := r.withRoom(func() (err error) { // metarsv.go
		f, err = r.ops.CreateTmpfile(n.id, mode, uid, gid)
		return err
	})
	if err != nil {
		return nil, nil, 0, n.m.errnoOf("tmpfile in", n.id, err)
	}
	id := f
	a, err := n.m.getattr(id)
	if err != nil {
		return nil, nil, 0, n.m.errnoOf("tmpfile", id, err)
	}
	r.mu.Lock()
	r.open[id] = &openState{opens: 1, orphan: true}
	r.mu.Unlock()
	a.fill(&out.Attr, n.m.ids.stable(id))
	ch := n.NewInode(ctx, &Node{m: n.m, id: id}, n.m.stableAttr(id, &a))
	direct := r.lowSpaceOpen(flags) // wbfail.go
	return ch, &fileHandle{n: ch.Operations().(*Node), direct: direct != 0}, fuse.FOPEN_KEEP_CACHE | direct, 0
}

// Mknod makes a fifo, socket or device node. mirrors btrfs_mknod
func (n *Node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.checkNewName(name)
	}
	if errno != 0 {
		return nil, errno
	}
	mode, errno = n.createMode(mode)
	if errno != 0 {
		return nil, errno
	}
	uid, gid, mode := n.owner(ctx, mode)
	var f ondisk.InodeRef
	err := r.withRoom(func() (err error) { // metarsv.go
		f, err = r.ops.Create(n.id, name, mode, uid, gid, ondisk.DecodeDevT(uint64(dev)))
		return err
	})
	if err == nil && mode&syscall.S_IFMT == syscall.S_IFREG {
		err = r.newFileFlags(f)
	}
	if err != nil {
		return nil, n.m.errnoOf("mknod "+name+" in", n.id, err)
	}
	return n.entry(ctx, "mknod", f, out)
}

// Mkdir makes a directory. mirrors btrfs_mkdir
func (n *Node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.checkNewName(name)
	}
	if errno != 0 {
		return nil, errno
	}
	mode, errno = n.createMode(mode)
	if errno != 0 {
		return nil, errno
	}
	uid, gid, mode := n.owner(ctx, mode&^syscall.S_IFMT|syscall.S_IFDIR)
	var f ondisk.InodeRef
	err := r.withRoom(func() (err error) { // metarsv.go
		f, err = r.ops.Mkdir(n.id, name, mode, uid, gid)
		return err
	})
	if err != nil {
		return nil, n.m.errnoOf("mkdir "+name+" in", n.id, err)
	}
	return n.entry(ctx, "mkdir", f, out)
}

// Symlink makes a symbolic link. mirrors btrfs_symlink
func (n *Node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.checkNewName(name)
	}
	if errno != 0 {
		return nil, errno
	}
	uid, gid, _ := n.owner(ctx, syscall.S_IFLNK)
	var f ondisk.InodeRef
	err := r.withRoom(func() (err error) { // metarsv.go
		f, err = r.ops.Symlink(n.id, name, target, uid, gid)
		return err
	})
	if err != nil {
		return nil, n.m.errnoOf("symlink "+name+" in", n.id, err)
	}
	return n.entry(ctx, "symlink", f, out)
}

// Link gives target another name in n. mirrors btrfs_link
func (n *Node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	r, errno := n.writable()
	if errno == 0 {
		errno = n.checkNewName(name)
	}
	if errno != 0 {
		return nil, errno
	}
	t, ok := target.(*Node)
	if !ok {
		return nil, syscall.EXDEV
	}
	if errno := n.m.flagPerm(t.id, true); errno != 0 {
		return nil, errno
	}
	r.nsMu.Lock()
	err := r.withRoom(func() error { return r.ops.Link(t.id, n.id, name) }) // metarsv.go
	r.nsMu.Unlock()
	if err != nil {
		return nil, n.m.errnoOf("link "+name+" in", n.id, err)
	}
	return n.entry(ctx, "link", t.id, out)
}

// Unlink removes a name that is not a directory. mirrors btrfs_unlink
func (n *Node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, false)
}

// Rmdir removes an empty directory (or an empty subvolume, as btrfs does).
// mirrors btrfs_rmdir
func (n *Node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, true)
}

func (n *Node) remove(name string, dir bool) syscall.Errno {
	r, errno := n.writable()
	if errno != 0 {
		return errno
	}
	if len(name) > nameMax {
		return syscall.ENAMETOOLONG
	}
	if r.hidden(n.id, name) {
		return syscall.ENOENT
	}
	if errno := n.mayDelete(name); errno != 0 {
		return errno
	}
	r.nsMu.Lock()
	defer r.nsMu.Unlock()
	victim, dies := r.prepareRemove(n.id, name, dir)
	var err error
	if dir {
		err = r.ops.Rmdir(n.id, name)
	} else {
		err = r.ops.Unlink(n.id, name)
	}
	if err != nil {
		op := "unlink "
		if dir {
			op = "rmdir "
		}
		return n.m.errnoOf(op+name+" in", n.id, err)
	}
	if dies {
		r.cache.Drop(victim)
		r.trimMeta() // metarsv.go
	}
	return 0
}

// renameWhiteout is RENAME_WHITEOUT: a whiteout (a character device 0:0,
// mode 0) takes the source's name (overlayfs upper layers).
const renameWhiteout = 1 << 2

// Rename moves name to newName in newParent; flags RENAME_NOREPLACE,
// RENAME_EXCHANGE and RENAME_WHITEOUT as renameat2. The whiteout is made in
// the same transaction as the rename. mirrors btrfs_rename2
func (n *Node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	whiteout := flags&renameWhiteout != 0
	flags &^= renameWhiteout
	if whiteout && flags&fsops.RenameExchange != 0 {
		return syscall.EINVAL
	}
	r, errno := n.writable()
	if errno == 0 {
		errno = n.checkNewName(newName)
	}
	if errno != 0 {
		return errno
	}
	if r.hidden(n.id, name) {
		return syscall.ENOENT
	}
	np, ok := newParent.(*Node)
	if !ok {
		return syscall.EXDEV
	}
	if errno := n.mayDelete(name); errno != 0 {
		return errno
	}
	if _, _, err := n.m.lookup(np.id, newName); err == nil {
		if errno := np.mayDelete(newName); errno != 0 {
			return errno
		}
	}
	r.nsMu.Lock()
	defer r.nsMu.Unlock()
	var victim ondisk.InodeRef
	var dies bool
	if flags&fsops.RenameExchange == 0 && flags&fsops.RenameNoReplace == 0 {
		src, sx, lerr := r.ops.Lookup(n.id, name)
		if lerr != nil {
			return n.m.errnoOf("rename "+name+" in", n.id, lerr)
		}
		if dst, _, lerr := r.ops.Lookup(np.id, newName); lerr == nil && dst == src {
			return 0 // both names link the same inode: nothing to do
		}
		victim, dies = r.prepareRemove(np.id, newName, sx.Mode&syscall.S_IFMT == syscall.S_IFDIR)
	}
	if err := r.withRoom(func() error { return r.ops.Rename(n.id, name, np.id, newName, flags) }); err != nil { // metarsv.go
		return n.m.errnoOf("rename "+name+" in", n.id, err)
	}
	if dies {
		r.cache.Drop(victim)
		r.trimMeta() // metarsv.go
	}
	if whiteout {
		uid, gid, mode := n.owner(ctx, syscall.S_IFCHR)
		if _, err := r.ops.Create(n.id, name, mode, uid, gid, 0); err != nil {
			return n.m.errnoOf("whiteout "+name+" in", n.id, err)
		}
	}
	return 0
}
