package fusefs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/pagecache"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mount is a mounted image.
type Mount struct {
	Image, Mountpoint string

	m      *fsys
	server *fuse.Server
	lock   *os.File

	closeOnce sync.Once
	closeErr  error
}

// cacheTimeout is how long the kernel keeps entries and attributes; every
// change passes through this process, so the kernel's copy stays right.
const cacheTimeout = time.Second

// New opens image (read-only through internal/fsread with o.ReadOnly,
// read-write through fsops otherwise), locks it, and mounts it at
// mountpoint. The mount is ready when New returns; Wait blocks until it is
// unmounted, and Close must follow to write everything back.
func New(image, mountpoint string, o Options) (*Mount, error) {
	abs, err := filepath.Abs(image)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(mountpoint); errors.Is(err, iofs.ErrNotExist) {
		return nil, fmt.Errorf("mount point %s does not exist", mountpoint)
	} else if err == nil && !st.IsDir() {
		return nil, fmt.Errorf("mount point %s is not a directory", mountpoint)
	}
	m := &fsys{log: o.Logger, opts: o, mountpoint: mountpoint}
	if len(o.Ignored) > 0 {
		m.logf("ignoring mount options that mean nothing for a gobtrfs mount: %s", strings.Join(o.Ignored, ","))
	}
	m.setAtimeRule(o.Atime, o.NoDiratime)
	lock, err := lockImage(abs, &o, m.logf)
	if err != nil {
		return nil, err
	}
	mt := &Mount{Image: abs, Mountpoint: mountpoint, lock: lock}
	mt.m = m
	warn := func(s string) { m.logf("%s", s) }
	if o.ReadOnly {
		b, err := openRO(abs, &o, warn)
		if err != nil {
			lock.Close()
			return nil, err
		}
		m.b = b
	} else {
		r, err := openRW(abs, &o, m)
		if err != nil {
			lock.Close()
			return nil, err
		}
		m.b, m.rw = r, r
		go r.flusher()
	}
	if id, err := blockdev.Identify(abs); err == nil {
		m.image = id // (opened and locked: the path still names it)
	}
	rootID := m.b.Root()
	m.ids = newInoMap(rootID.Root)
	ra, err := m.b.Getattr(rootID)
	if err == nil && ra.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		err = fmt.Errorf("inode %d of subvolume %d has mode %#o, not a directory: %w", rootID.Ino, rootID.Root, ra.Mode, diskio.ErrCorrupt)
	}
	if err != nil {
		mt.closeBackend()
		return nil, fmt.Errorf("root directory: %w", err)
	}
	root := &Node{m: m, id: rootID}
	st := m.stableAttr(rootID, &ra)
	if a, err := filepath.Abs(mountpoint); err == nil {
		m.mountpoint = a
	}
	before := mountsBefore(mountpoint)
	mt.server, err = mountFS(mountpoint, root, mt.fsOptions(&o, st))
	if err != nil {
		err = undoFailedMount(mountpoint, before, err) // serve.go
		mt.closeBackend()
		return nil, fmt.Errorf("mount %s on %s: %w", image, mountpoint, err)
	}
	m.server.Store(mt.server)
	return mt, nil
}

func (mt *Mount) fsOptions(o *Options, root fs.StableAttr) *fs.Options {
	timeout := cacheTimeout
	fsname := o.FsName
	if fsname == "" {
		fsname = mt.Image
	}
	kopts := []string{"default_permissions"}
	if o.ReadOnly {
		kopts = append(kopts, "ro")
	}
	kopts = append(kopts, o.KernelOptions...)
	direct := os.Geteuid() == 0
	var flags uintptr
	if direct {
		flags = o.mountFlags()
	} else {
		kopts = append(kopts, o.mountFlagStrings()...)
	}
	caps := uint64(fuse.CAP_EXPORT_SUPPORT) // file handles (export.go)
	if o.writebackCache() {
		// files opened near a full filesystem bypass the kernel's
		// cache (wbfail.go); shared mmap of them keeps working
		caps |= fuse.CAP_WRITEBACK_CACHE | fuse.CAP_DIRECT_IO_ALLOW_MMAP
	}
	logger := o.Logger
	if logger == nil {
		logger = log.New(os.Stderr, "gobtrfs: ", log.LstdFlags)
	}
	return &fs.Options{
		MountOptions: fuse.MountOptions{
			AllowOther:       o.AllowOther,
			FsName:           fsname,
			Name:             "gobtrfs",
			Options:          kopts,
			Debug:            o.Debug,
			Logger:           logger,
			DirectMount:      direct,
			DirectMountFlags: flags,
			MaxWrite:         1 << 20,

			ExtraCapabilities: caps,
		},
		EntryTimeout:   &timeout,
		AttrTimeout:    &timeout,
		RootStableAttr: &root,
		ExternalNodeID: true,
		Logger:         logger,
	}
}

// Wait blocks until the filesystem is unmounted (umount, fusermount3 -u,
// or Unmount).
func (mt *Mount) Wait() { mt.server.Wait() }

// Unmount asks the kernel to unmount; it fails while the mount is busy.
func (mt *Mount) Unmount() error { return mt.server.Unmount() }

// Close writes every buffered byte back, commits, closes the image and
// drops the lock. Call it after the filesystem is unmounted.
func (mt *Mount) Close() error {
	mt.closeOnce.Do(func() { mt.closeErr = mt.closeBackend() })
	return mt.closeErr
}

func (mt *Mount) closeBackend() error {
	err := mt.m.b.Close()
	if mt.lock != nil {
		err = errors.Join(err, mt.lock.Close())
	}
	return err
}

// Sync writes back every dirty inode (the writeback list only) and commits.
func (mt *Mount) Sync() error {
	if mt.m.rw == nil {
		return nil
	}
	return mt.m.rw.syncWithKernel()
}

// CacheStats reports the page cache's counters (nil pagecache on a
// read-only mount gives zeros).
func (mt *Mount) CacheStats() pagecache.Stats {
	if mt.m.rw == nil {
		return pagecache.Stats{}
	}
	return mt.m.rw.cache.Stats()
}

// FsyncStats reports how the mount's fsyncs were made durable (zeros on a
// read-only mount).
func (mt *Mount) FsyncStats() treelog.StatsSnapshot {
	if mt.m.rw == nil {
		return treelog.StatsSnapshot{}
	}
	return mt.m.rw.ops.FsyncStats()
}

// CommitStats reports the mount's commits (zeros on a read-only mount).
func (mt *Mount) CommitStats() fsops.CommitStats {
	if mt.m.rw == nil {
		return fsops.CommitStats{}
	}
	return mt.m.rw.ops.CommitStats()
}

// ReadOnly reports a read-only mount.
func (mt *Mount) ReadOnly() bool { return mt.m.rw == nil }
