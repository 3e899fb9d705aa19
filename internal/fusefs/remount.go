package fusefs

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Remount. FUSE has no request for it: mount(2) with MS_REMOUNT changes
// the kernel's superblock and per-mount flags (SB_RDONLY, nosuid, nodev,
// noexec, the atime flags) and ignores the options string, and the daemon
// hears nothing (fuse_reconfigure only syncs the kernel side). So
// `mount -o remount,ro DIR` alone would leave the daemon writing atimes
// and committing behind a read-only mount. Remount (what mount.fuse.gobtrfs
// runs for -o remount) therefore does the mount(2) and tells the daemon
// through a private ioctl on the mount point, which FUSE forwards:
//
//   - to read-only: mount(2) first (the kernel refuses it with EBUSY while
//     a file is open for writing), then the ioctl: the daemon writes back
//     everything buffered, commits, and refuses changes with EROFS until
//     remounted read-write; reads no longer touch atimes.
//   - to read-write: the ioctl first (a mount made with -o ro has no write
//     side and refuses: unmount and mount it again), then mount(2).
//
// The ioctl also carries the atime options (noatime, relatime,
// strictatime, [no]diratime), which change live. Options that cannot
// change on a live mount (compress=, commit=, subvol=) are refused.

// gobtrfsIocRemount is _IOW('g', 0x42, __u64): the daemon's half of a
// remount (remountArg bits).
const gobtrfsIocRemount = 0x40086742

const (
	remountRO       = 1 << 0
	remountRW       = 1 << 1
	remountAtime    = 1 << 2 // the atime mode below is given
	remountDiratime = 1 << 3 // the nodiratime bit below is given
	remountNoDir    = 1 << 4
	remountModeBit  = 8 // AtimeMode << remountModeBit
)

// Remount changes the mount at dir as `mount -o remount,OPTS` does on a
// kernel filesystem (opts without "remount", e.g. "ro" or "rw,noatime").
func Remount(dir, opts string) error {
	var arg uint64
	var set, clear uintptr
	for _, opt := range strings.Split(opts, ",") {
		switch opt = strings.TrimSpace(opt); opt {
		case "", "remount", "defaults", "allow_other", "default_permissions":
		case "ro":
			arg, set, clear = arg&^remountRW|remountRO, set|unix.MS_RDONLY, clear&^unix.MS_RDONLY
		case "rw":
			arg, set, clear = arg&^remountRO|remountRW, set&^unix.MS_RDONLY, clear|unix.MS_RDONLY
		case "noatime":
			arg = arg&^(0xff<<remountModeBit) | remountAtime | uint64(AtimeNever)<<remountModeBit
			set, clear = set|unix.MS_NOATIME, clear|unix.MS_RELATIME|unix.MS_STRICTATIME
		case "relatime", "atime":
			arg = arg&^(0xff<<remountModeBit) | remountAtime | uint64(AtimeRelative)<<remountModeBit
			set, clear = set|unix.MS_RELATIME, clear|unix.MS_NOATIME|unix.MS_STRICTATIME
		case "strictatime", "norelatime":
			arg = arg&^(0xff<<remountModeBit) | remountAtime | uint64(AtimeStrict)<<remountModeBit
			set, clear = set|unix.MS_STRICTATIME, clear|unix.MS_NOATIME|unix.MS_RELATIME
		case "nodiratime":
			arg |= remountDiratime | remountNoDir
			set, clear = set|unix.MS_NODIRATIME, clear&^unix.MS_NODIRATIME
		case "diratime":
			arg = arg&^remountNoDir | remountDiratime
			set, clear = set&^unix.MS_NODIRATIME, clear|unix.MS_NODIRATIME
		case "nosuid", "suid", "nodev", "dev", "noexec", "exec", "sync", "async", "lazytime", "nolazytime":
			if f := remountFlagOpts[opt]; f.on {
				set, clear = set|f.flag, clear&^f.flag
			} else {
				set, clear = set&^f.flag, clear|f.flag
			}
		default:
			k, _, _ := strings.Cut(opt, "=")
			if fuseKernelOptions[k] {
				continue // mount(8) passes the mount's options from mountinfo along
			}
			o := Options{}
			if err := ParseMountOptions(opt, &o); err != nil {
				return err
			}
			if o.Compress != "" || o.CommitInterval != 0 || o.Subvol != "" || o.SubvolID != 0 {
				return fmt.Errorf("remount %s: option %s cannot change on a mounted filesystem (unmount and mount again)", dir, opt)
			}
			// anything else ParseMountOptions accepts means nothing live
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("remount %s: %w", dir, err)
	}
	if st.Type != fuseSuperMagic {
		return fmt.Errorf("remount %s: not a FUSE mount", dir)
	}
	flags := msFlagsOf(uint64(st.Flags))
	if set&(unix.MS_NOATIME|unix.MS_RELATIME|unix.MS_STRICTATIME) != 0 {
		flags &^= unix.MS_NOATIME | unix.MS_RELATIME | unix.MS_STRICTATIME
	}
	flags = flags&^clear | set
	if arg&remountRW != 0 {
		if err := tellDaemon(dir, arg); err != nil {
			return err
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|flags, ""); err != nil {
		return fmt.Errorf("remount %s: %w", dir, err)
	}
	if arg&remountRW == 0 {
		return tellDaemon(dir, arg)
	}
	return nil
}

// fuseKernelOptions are the FUSE kernel mount's own options, which
// mount(8) hands a helper again on remount; they cannot change.
var fuseKernelOptions = map[string]bool{"user_id": true, "group_id": true, "rootmode": true, "fd": true,
	"max_read": true, "blksize": true, "default_permissions": true, "allow_other": true}

// remountFlagOpts are the per-mount flags a remount may change.
var remountFlagOpts = map[string]struct {
	flag uintptr
	on   bool
}{
	"nosuid": {unix.MS_NOSUID, true}, "suid": {unix.MS_NOSUID, false},
	"nodev": {unix.MS_NODEV, true}, "dev": {unix.MS_NODEV, false},
	"noexec": {unix.MS_NOEXEC, true}, "exec": {unix.MS_NOEXEC, false},
	"sync": {unix.MS_SYNCHRONOUS, true}, "async": {unix.MS_SYNCHRONOUS, false},
	"lazytime": {unix.MS_LAZYTIME, true}, "nolazytime": {unix.MS_LAZYTIME, false},
}

// fuseSuperMagic is statfs's f_type of a FUSE mount.
const fuseSuperMagic = 0x65735546

// msFlagsOf turns statfs f_flags (ST_*) into mount(2) flags (MS_*).
func msFlagsOf(f uint64) uintptr {
	var ms uintptr
	for _, p := range [][2]uint64{{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_SYNCHRONOUS, unix.MS_SYNCHRONOUS},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME}} {
		if f&p[0] != 0 {
			ms |= uintptr(p[1])
		}
	}
	if f&(unix.ST_NOATIME|unix.ST_RELATIME) == 0 {
		ms |= unix.MS_STRICTATIME
	}
	return ms
}

// tellDaemon sends the remount ioctl to the daemon serving dir.
func tellDaemon(dir string, arg uint64) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("remount %s: %w", dir, err)
	}
	defer f.Close()
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], arg)
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), gobtrfsIocRemount, uintptr(unsafe.Pointer(&b[0])))
	if errno != 0 {
		if errno == syscall.EROFS {
			return fmt.Errorf("remount %s read-write: it was mounted with -o ro (unmount and mount it again without ro)", dir)
		}
		return fmt.Errorf("remount %s: the gobtrfs daemon: %w", dir, errno)
	}
	return nil
}

// remounted is the daemon's half of Remount.
func (m *fsys) remounted(arg uint64) error {
	if arg&remountAtime != 0 || arg&remountDiratime != 0 {
		mode, nodir := m.atimeRule()
		if arg&remountAtime != 0 {
			mode = AtimeMode(arg >> remountModeBit & 0xff)
		}
		if arg&remountDiratime != 0 {
			nodir = arg&remountNoDir != 0
		}
		m.setAtimeRule(mode, nodir)
	}
	switch {
	case arg&remountRW != 0:
		if m.rw == nil {
			return syscall.EROFS
		}
		if m.frozen.Swap(false) {
			m.logf("remounted read-write")
		}
	case arg&remountRO != 0 && m.rw != nil && !m.frozen.Load():
		m.frozen.Store(true)
		if err := m.rw.syncAll(); err != nil {
			return err
		}
		m.logf("remounted read-only: everything written back and committed")
	}
	return nil
}
