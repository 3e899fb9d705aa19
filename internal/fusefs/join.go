package fusefs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// A second mount of a mounted image.
//
// Kernel btrfs gives a second mount of a mounted device the superblock it
// has: both mount points show one filesystem, one page cache, one set of
// cached inodes (generic/732 renames through one and reads through the
// other), and the subvolume asked for picks the root dentry. A gobtrfs
// image has one writer, the daemon of its first mount, so a second
// `gobtrfs mount IMG DIR2` (or mount.fuse.gobtrfs) joins that daemon
// instead of opening the image again: it asks the daemon, through a
// private ioctl on the first mount point, where the subvolume it wants is
// below that mount's root, and bind-mounts that directory on DIR2 with the
// per-mount flags asked for (ro, nosuid, nodev, noexec). The bind shares
// the FUSE connection, so it is the same superblock, as on the kernel:
// the daemon serves until the last of the mounts goes, and a remount of
// either changes both. Options of the filesystem itself (compress=,
// commit=, no_writeback_cache...) are those of the first mount; the
// kernel ignores them on a second mount too.
//
// Refused, with the reason: a caller that may not bind-mount (not root),
// a read-write mount while the first is read-only, a subvolume outside
// the first mount's root.

// gobtrfsIocSubvolPath is _IOWR('g', 0x43, char[4096]): in, a u64
// subvolid (0: none), a u32 of joinArg flags and a NUL-terminated subvol=
// path from offset 16; out, the path of that subvolume's root below the
// mount's root (NUL-terminated, "" for the root itself) from offset 16,
// at offset 8 a u32 of joinState bits, and in the last 16 bytes the
// blockdev.FileID of the image the daemon serves (two u64; zero from a
// daemon that did not say), so that a directory showing another
// filesystem now (mounted over the first mount) is not joined.
const gobtrfsIocSubvolPath = 0xd0006743

const (
	joinArgSize  = 4096
	joinPathOff  = 16
	joinIDOff    = joinArgSize - 16
	joinReadOnly = 1 << 0 // state: the daemon writes nothing (ro or remounted ro)
)

// ErrNotJoinable is returned (errors.Is) by Join when the mount at the
// given directory is not a live gobtrfs mount that can be asked.
var ErrNotJoinable = errors.New("not a live gobtrfs mount")

// Join mounts the filesystem that the live gobtrfs mount at existing
// serves (a mount of image) on mountpoint, as a second kernel mount of a
// btrfs device would: see above. o carries the second mount's options.
func Join(image, existing, mountpoint string, o Options) error {
	if o.Subvol != "" && o.SubvolID != 0 {
		return fmt.Errorf("mount %s on %s: subvol= and subvolid= together", image, mountpoint)
	}
	fi, err := os.Stat(mountpoint)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("mount point %s does not exist", mountpoint)
		}
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("mount point %s is not a directory", mountpoint)
	}
	rel, readOnly, served, err := askSubvolPath(existing, o.Subvol, o.SubvolID)
	if err != nil {
		return err
	}
	if served != (blockdev.FileID{}) {
		want, err := blockdev.Identify(image)
		if err != nil {
			return fmt.Errorf("mount %s on %s: %w", image, mountpoint, err)
		}
		if want != served {
			return fmt.Errorf("mount %s on %s: %s was its mount point, but another filesystem is mounted there now (mounted over it?): unmount that one first", image, mountpoint, existing)
		}
	}
	if readOnly && !o.ReadOnly {
		return fmt.Errorf("%s is mounted read-only on %s: a second read-write mount needs `mount -o remount,rw %s` first", image, existing, existing)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is mounted on %s: a second mount of it shares that mount's daemon through a bind mount, which needs root", image, existing)
	}
	src := filepath.Join(existing, rel)
	if err := unix.Mount(src, mountpoint, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mount %s (mounted on %s) on %s: bind %s: %w", image, existing, mountpoint, src, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND)
	if o.ReadOnly {
		flags |= unix.MS_RDONLY
	}
	if o.NoSuid {
		flags |= unix.MS_NOSUID
	}
	if o.NoDev {
		flags |= unix.MS_NODEV
	}
	if o.NoExec {
		flags |= unix.MS_NOEXEC
	}
	if err := unix.Mount("", mountpoint, "", flags, ""); err != nil {
		unix.Unmount(mountpoint, unix.MNT_DETACH)
		return fmt.Errorf("mount %s on %s: per-mount flags: %w", image, mountpoint, err)
	}
	return nil
}

// askSubvolPath asks the daemon of the mount at dir where the subvolume
// of subvol= / subvolid= (neither: the default subvolume) is below its
// root, whether it is read-only, and which image it serves.
func askSubvolPath(dir, subvol string, subvolID uint64) (string, bool, blockdev.FileID, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type != fuseSuperMagic {
		return "", false, blockdev.FileID{}, fmt.Errorf("%s: %w", dir, ErrNotJoinable)
	}
	f, err := os.Open(dir)
	if err != nil {
		return "", false, blockdev.FileID{}, fmt.Errorf("%s: %w (%v)", dir, ErrNotJoinable, err)
	}
	defer f.Close()
	var buf [joinArgSize]byte
	binary.NativeEndian.PutUint64(buf[0:], subvolID)
	if len(subvol) >= joinIDOff-joinPathOff {
		return "", false, blockdev.FileID{}, fmt.Errorf("subvol=%.40s...: %w", subvol, syscall.ENAMETOOLONG)
	}
	copy(buf[joinPathOff:], subvol)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), gobtrfsIocSubvolPath, uintptr(unsafe.Pointer(&buf[0]))); e != 0 {
		switch e {
		case syscall.ENOENT:
			return "", false, blockdev.FileID{}, fmt.Errorf("mount on %s: subvolume %s: %w", dir, subvolName(subvol, subvolID), os.ErrNotExist)
		case syscall.EXDEV:
			return "", false, blockdev.FileID{}, fmt.Errorf("mount on %s: subvolume %s is not below the root of the mount on %s (mounted with another subvol=)", dir, subvolName(subvol, subvolID), dir)
		case syscall.EPERM, syscall.EACCES:
			return "", false, blockdev.FileID{}, fmt.Errorf("%s is a gobtrfs mount of the image: a second mount of it needs root", dir)
		}
		return "", false, blockdev.FileID{}, fmt.Errorf("%s: %w (%v)", dir, ErrNotJoinable, e)
	}
	p := buf[joinPathOff:joinIDOff]
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	id := blockdev.FileID{Dev: binary.NativeEndian.Uint64(buf[joinIDOff:]), Ino: binary.NativeEndian.Uint64(buf[joinIDOff+8:])}
	return string(p), binary.NativeEndian.Uint32(buf[8:])&joinReadOnly != 0, id, nil
}

func subvolName(subvol string, id uint64) string {
	switch {
	case id != 0:
		return fmt.Sprintf("subvolid=%d", id)
	case subvol != "":
		return "subvol=" + subvol
	}
	return "(default)"
}

// subvolPath is the daemon's half: see gobtrfsIocSubvolPath.
func (n *Node) subvolPath(ctx context.Context, in, out []byte) syscall.Errno {
	if len(in) < joinArgSize || len(out) < joinArgSize {
		return syscall.EINVAL
	}
	if !capable(ctx) {
		return syscall.EPERM
	}
	r := n.m.rw
	if r == nil {
		return syscall.EOPNOTSUPP // a read-only mount shares the image with another read-only daemon
	}
	o := Options{SubvolID: binary.NativeEndian.Uint64(in[0:])}
	name := in[joinPathOff:joinIDOff]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	o.Subvol = string(name)
	want, err := r.pickSubvol(&o)
	if err != nil {
		return n.m.errnoOf("subvolume of a second mount", n.id, err)
	}
	have := n.m.b.Root().Root
	rel := ""
	if want != have {
		paths := map[ondisk.ObjectID]string{ondisk.FSTreeObjectID: ""}
		subs, err := r.ops.ListSubvolumes()
		if err != nil {
			return n.m.errnoOf("subvolume of a second mount", n.id, err)
		}
		for _, s := range subs {
			paths[s.ID] = s.Path
		}
		wp, ok := paths[want]
		if !ok {
			return syscall.ENOENT
		}
		hp := paths[have]
		switch {
		case hp == "":
			rel = wp
		case strings.HasPrefix(wp, hp+"/"):
			rel = wp[len(hp)+1:]
		default:
			return syscall.EXDEV
		}
	}
	if len(rel) >= joinIDOff-joinPathOff {
		return syscall.ENAMETOOLONG
	}
	clear(out[:joinArgSize])
	var state uint32
	if n.m.frozen.Load() {
		state |= joinReadOnly
	}
	binary.NativeEndian.PutUint32(out[8:], state)
	copy(out[joinPathOff:], rel)
	binary.NativeEndian.PutUint64(out[joinIDOff:], n.m.image.Dev)
	binary.NativeEndian.PutUint64(out[joinIDOff+8:], n.m.image.Ino)
	return 0
}
