package fusefs

import (
	"fmt"
	"log"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options say how an image is mounted. ParseMountOptions reads them from a
// mount -o string.
type Options struct {
	ReadOnly bool
	// Compress is the algorithm for new data ("zlib", "lzo", "zstd",
	// optionally ":LEVEL"; "" or "no" for none).
	Compress string
	// CommitInterval is how often dirty data is written back and the
	// transaction committed (the kernel's commit=); 0 means 30 s.
	CommitInterval time.Duration
	// Subvol or SubvolID pick the subvolume mounted as the root (default:
	// the filesystem's default subvolume).
	Subvol   string
	SubvolID uint64
	// AllowOther lets other users see the mount (needs user_allow_other in
	// /etc/fuse.conf for non-root).
	AllowOther bool
	// DirtyLimit bounds the buffered data, dirty or in writeback: writers
	// wait for the flusher above it (and write back themselves when it
	// does not get under it soon); the flusher writes back from half of
	// it. 0 means 256 MiB.
	DirtyLimit int64
	// The kernel gathers small writes in its own page cache and sends them
	// in large WRITE requests (FUSE writeback_cache, the default of a
	// read-write mount): far fewer round trips for streams of small
	// writes. The kernel then keeps a regular file's size, mtime and ctime
	// and sends them with SETATTR (on close, fsync, sync and inode
	// writeback); the daemon stamps with the kernel's clock (clock.go).
	// NoWritebackCache (-o no_writeback_cache) sends every write(2) to the
	// daemon instead, which then stamps the times itself.
	NoWritebackCache bool
	// WritebackCache (-o writeback_cache) is the default; the field is
	// kept for callers that set it, and NoWritebackCache wins.
	WritebackCache bool
	// NoDataCsum skips data checksum verification on a read-only mount;
	// on a read-write one new regular files get NODATASUM (the kernel's
	// nodatasum). NoDataCow gives new regular files NODATACOW and
	// NODATASUM (nodatacow): their writes go in place.
	NoDataCsum bool
	NoDataCow  bool
	// NoLogReplay (read-only mounts only) shows the committed state of an
	// image with a pending log tree instead of replaying the log in memory:
	// fsync'd changes after the last commit are not shown (the kernel's
	// nologreplay).
	NoLogReplay bool
	// Debug logs every FUSE request.
	Debug bool
	// Logger receives error and corruption reports (default: the standard logger).
	Logger *log.Logger
	// FsName is shown as the mount's source (default: the image path).
	FsName string
	// LockWait is how long a mount waits for another holder of the image
	// (such as the daemon of a mount that was just unmounted and is still
	// writing back) before it gives up with ErrLocked; 0 does not wait.
	LockWait time.Duration
	// KernelOptions are passed to the kernel mount as they are ("sync", "dirsync").
	KernelOptions []string
	// Atime is when reads update the access time: AtimeRelative (the
	// default, relatime), AtimeNever (noatime) or AtimeStrict (strictatime).
	// NoDiratime leaves directories' access times alone (nodiratime).
	Atime      AtimeMode
	NoDiratime bool
	// NoSuid, NoDev and NoExec are the kernel's nosuid, nodev and noexec.
	// A mount made by root honours set-user-ID bits and device nodes as a
	// kernel btrfs mount does unless told otherwise; one made through
	// fusermount3 (not root) is always nosuid,nodev: FUSE's rule for
	// unprivileged mounts.
	NoSuid, NoDev, NoExec bool
	// Ignored lists the kernel btrfs options given that mean nothing for
	// this mount (ssd, space_cache=v2, discard=async...): New logs them
	// in one line; fstab lines written for the kernel mount as they are.
	Ignored []string
}

// AtimeMode is the access time rule of a mount (atime.go).
type AtimeMode int

const (
	AtimeRelative AtimeMode = iota // relatime
	AtimeNever                     // noatime
	AtimeStrict                    // strictatime
)

const (
	defaultCommitInterval = 30 * time.Second
	defaultDirtyLimit     = 256 << 20
)

// ignoredOptions are mount(8)/fstab options that concern mount itself or
// the kernel, not the filesystem.
var ignoredOptions = map[string]bool{
	"rw": true, "defaults": true, "auto": true, "noauto": true, "user": true, "nouser": true,
	"users": true, "owner": true, "group": true, "_netdev": true, "nofail": true, "async": true,
	"x-systemd.automount": true, "default_permissions": true, "loop": true,
	"lazytime": true, "nolazytime": true,
}

// mountFlags are the mount(2) flags of a mount made directly (as root):
// nosuid, nodev, noexec as asked, and the atime flags, which the kernel
// shows in /proc/mounts (the daemon applies the atime rules, atime.go).
func (o *Options) mountFlags() uintptr {
	var f uintptr
	for _, b := range []struct {
		on   bool
		flag uintptr
	}{{o.NoSuid, syscall.MS_NOSUID}, {o.NoDev, syscall.MS_NODEV}, {o.NoExec, syscall.MS_NOEXEC},
		{o.NoDiratime, syscall.MS_NODIRATIME}, {o.ReadOnly, syscall.MS_RDONLY}} {
		if b.on {
			f |= b.flag
		}
	}
	switch o.Atime {
	case AtimeNever:
		f |= syscall.MS_NOATIME
	case AtimeStrict:
		f |= msStrictAtime
	default:
		f |= syscall.MS_RELATIME
	}
	return f
}

// msStrictAtime is MS_STRICTATIME (not in package syscall).
const msStrictAtime = 1 << 24

// mountFlagStrings are the same for fusermount3 (which adds nosuid,nodev
// for users other than root).
func (o *Options) mountFlagStrings() []string {
	var s []string
	for _, b := range []struct {
		on   bool
		name string
	}{{o.NoSuid, "nosuid"}, {o.NoDev, "nodev"}, {o.NoExec, "noexec"}, {o.NoDiratime, "nodiratime"},
		{o.Atime == AtimeNever, "noatime"}, {o.Atime == AtimeStrict, "strictatime"}} {
		if b.on {
			s = append(s, b.name)
		}
	}
	return s
}

// kernelBtrfsOptions are the kernel btrfs mount options (with a value
// where they take one) that change nothing here: allocation and device
// hints, caches, background work, debugging, recovery of other kinds.
var kernelBtrfsOptions = map[string]bool{
	"ssd": true, "ssd_spread": true, "nossd": true, "nossd_spread": true,
	"space_cache": true, "nospace_cache": true, "clear_cache": true,
	"discard": true, "nodiscard": true, "autodefrag": true, "noautodefrag": true,
	"thread_pool": true, "max_inline": true, "metadata_ratio": true,
	"flushoncommit": true, "noflushoncommit": true, "barrier": true, "nobarrier": true,
	"treelog": true, "notreelog": true,
	"skip_balance": true, "enospc_debug": true, "noenospc_debug": true,
	"user_subvol_rm_allowed": true, "rescan_uuid_tree": true, "degraded": true, "device": true,
	"fatal_errors": true, "acl": true, "noacl": true, "usebackuproot": true, "recovery": true,
	"norecovery": true, "inode_cache": true, "noinode_cache": true, "check_int": true,
	"check_int_data": true, "check_int_print_mask": true, "fragment": true, "ref_verify": true,
	"iversion": true, "noiversion": true, "rescue": true,
}

// kernelPassed are options handed to the kernel mount.
var kernelPassed = map[string]bool{"sync": true, "dirsync": true}

// ParseMountOptions adds the comma-separated options s to o.
func ParseMountOptions(s string, o *Options) error {
	for _, opt := range strings.Split(s, ",") {
		opt = strings.TrimSpace(opt)
		if opt == "" {
			continue
		}
		k, v, hasV := strings.Cut(opt, "=")
		switch {
		case k == "ro":
			o.ReadOnly = true
		case k == "compress" || k == "compress-force":
			o.Compress = v
		case k == "commit" && hasV:
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("option commit=%s: want a positive number of seconds", v)
			}
			o.CommitInterval = time.Duration(n) * time.Second
		case k == "lock_wait" && hasV:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("option lock_wait=%s: want a number of seconds", v)
			}
			o.LockWait = time.Duration(n) * time.Second
		case k == "subvol" && hasV:
			o.Subvol = v
		case k == "subvolid" && hasV:
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return fmt.Errorf("option subvolid=%s: %w", v, err)
			}
			o.SubvolID = n
		case k == "allow_other":
			o.AllowOther = true
		case k == "dirty_limit" && hasV:
			n, err := parseSize(v)
			if err != nil {
				return fmt.Errorf("option dirty_limit=%s: %w", v, err)
			}
			o.DirtyLimit = n
		case k == "writeback_cache":
			o.WritebackCache, o.NoWritebackCache = true, false
		case k == "no_writeback_cache" || k == "nowriteback_cache":
			o.NoWritebackCache = true
		case k == "nodatasum" || (k == "rescue" && v == "ignoredatacsums"):
			o.NoDataCsum = true
		case k == "datasum":
			o.NoDataCsum = false
		case k == "nodatacow" || k == "datacow":
			o.NoDataCow = k == "nodatacow"
		case k == "nologreplay" || (k == "rescue" && v == "nologreplay"):
			o.NoLogReplay = true
		case k == "relatime" || k == "atime":
			o.Atime = AtimeRelative
		case k == "noatime":
			o.Atime = AtimeNever
		case k == "strictatime" || k == "norelatime":
			o.Atime = AtimeStrict
		case k == "nodiratime":
			o.NoDiratime = true
		case k == "diratime":
			o.NoDiratime = false
		case k == "nosuid" || k == "suid":
			o.NoSuid = k == "nosuid"
		case k == "nodev" || k == "dev":
			o.NoDev = k == "nodev"
		case k == "noexec" || k == "exec":
			o.NoExec = k == "noexec"
		case k == "debug":
			o.Debug = true
		case k == "fsname" && hasV:
			o.FsName = v
		case kernelPassed[k]:
			o.KernelOptions = append(o.KernelOptions, opt)
		case kernelBtrfsOptions[k]:
			o.Ignored = append(o.Ignored, opt)
		case ignoredOptions[k] || strings.HasPrefix(k, "x-") || strings.HasPrefix(k, "comment="):
		default:
			return fmt.Errorf("unknown mount option %q", opt)
		}
	}
	return nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mult = 1 << 10
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult = 1 << 20
	case strings.HasSuffix(s, "G"), strings.HasSuffix(s, "g"):
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a size like 64M")
	}
	return n * mult, nil
}

// writebackCache says whether the mount asks for the kernel's writeback
// cache: read-write mounts unless no_writeback_cache.
func (o *Options) writebackCache() bool { return !o.ReadOnly && !o.NoWritebackCache }
