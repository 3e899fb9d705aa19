// Package fsread reads a btrfs filesystem by inode identity: inodes,
// directory entries (crossing into subvolumes, with the kernel's placeholder
// for a subvolume a snapshot did not take), file data (checksums verified,
// the other copy tried, extent mappings and decompressed extents cached),
// symlinks, xattrs and subvolumes, over an image opened read-only (a pending
// log tree replayed in memory). It is the read engine under the library's
// FS and the read-only mount; the doors translate paths and errors.
package fsread

import (
	"fmt"
	"sync"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/datacsum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/extentmap"
	"github.com/gobtrfs/gobtrfs/internal/fileread"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Options control an open; the root package's Options say what each does.
type Options struct {
	NoVerifyDataCsum bool
	SuperMirror      int
	Warn             func(string)
	ExtentCacheBytes int64
	TreeCacheBytes   int
	SubvolID         uint64
	Subvol           string
	NoLogReplay      bool
	// DeviceNames name the devices of OpenDevices in messages (their paths).
	DeviceNames []string
}

// Engine is an open filesystem, one subvolume of it chosen as its root.
// Safe for concurrent use.
type Engine struct {
	info    *fsinfo.FSInfo
	devs    []blockdev.Device // closed by Close (after a replay, the overlay)
	opts    Options
	root    ondisk.InodeRef
	extents *extentmap.Cache
	csums   *datacsum.Tree   // nil without a csum tree
	data    *fileread.Engine // reads file extents: verified, other copy tried, cached
	warned  sync.Map         // warnings already given, by text key
	opened  time.Time

	treesMu sync.Mutex
	trees   map[ondisk.ObjectID]*ctree.Tree
}

// Open opens the filesystem on dev (read-only; a pending log tree is
// replayed in memory unless o.NoLogReplay) and picks its root subvolume.
// dev is closed by Close (after a replay, the overlay over it).
func Open(dev blockdev.Device, o Options) (*Engine, error) {
	return OpenDevices([]blockdev.Device{dev}, o)
}

// OpenDevices is Open for the devices of a multi-device filesystem, in any
// order (fsinfo.OpenDevices: a missing device is a warning, what has no
// copy without it fails naming it). Close closes every device.
func OpenDevices(devs []blockdev.Device, o Options) (*Engine, error) {
	info, err := fsinfo.OpenDevices(devs, fsinfo.Options{ReadOnly: true, SuperMirror: o.SuperMirror,
		CacheBytes: o.TreeCacheBytes, Warn: o.Warn, DeviceNames: o.DeviceNames})
	if err != nil {
		return nil, err
	}
	if info.Super.LogRoot != 0 {
		info, devs = replayLog(info, devs, o) // in memory; the image is not written
	}
	f := &Engine{info: info, devs: devs, opts: o, trees: map[ondisk.ObjectID]*ctree.Tree{},
		extents: extentmap.New(o.ExtentCacheBytes), opened: time.Now()}
	f.data = fileread.New(info.R, fileread.Options{Cache: true, Warn: o.Warn})
	if t, err := info.Tree(ondisk.CsumTreeObjectID); err == nil {
		f.csums = &datacsum.Tree{T: t, SectorSize: info.Super.SectorSize, Type: info.Csum}
	} else if !o.NoVerifyDataCsum {
		f.Warn("no csum tree", fmt.Sprintf("no csum tree (%v): data is not verified", err))
	}
	id, err := f.pickRoot()
	if err != nil {
		return nil, err
	}
	if _, err := f.Tree(id); err != nil {
		return nil, fmt.Errorf("open subvolume %d: %w", id, err)
	}
	f.root = ondisk.InodeRef{Root: id, Ino: ondisk.FirstFreeObjectID}
	return f, nil
}

// Close releases the devices.
func (f *Engine) Close() error {
	var first error
	for _, d := range f.devs {
		if err := d.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Root is the root directory of the subvolume the engine was opened on.
func (f *Engine) Root() ondisk.InodeRef { return f.root }

// Info is the open filesystem (superblock, tree roots, block reader).
func (f *Engine) Info() *fsinfo.FSInfo { return f.info }

// Extents is the extent mapping cache.
func (f *Engine) Extents() *extentmap.Cache { return f.extents }

// Warn reports msg once per key.
func (f *Engine) Warn(key, msg string) {
	if _, dup := f.warned.LoadOrStore(key, true); dup {
		return
	}
	if f.opts.Warn != nil {
		f.opts.Warn(msg)
	}
}

// Tree returns the B-tree of subvolume id, cached.
func (f *Engine) Tree(id ondisk.ObjectID) (*ctree.Tree, error) {
	f.treesMu.Lock()
	t := f.trees[id]
	f.treesMu.Unlock()
	if t != nil {
		return t, nil
	}
	t, err := f.info.Tree(id)
	if err != nil {
		return nil, err
	}
	f.treesMu.Lock()
	f.trees[id] = t
	f.treesMu.Unlock()
	return t, nil
}

func corruptf(format string, args ...any) error { return diskio.Corruptf(format, args...) }

// SectorSize is the filesystem's sector size.
func (f *Engine) SectorSize() uint32 { return f.info.Super.SectorSize }
