// Package gobtrfs reads and writes btrfs filesystem images in pure Go,
// images that the Linux kernel mounts.
//
// Open gives a read-only view; OpenRW (an *RW) changes an image, each
// change in the current transaction until Commit or Close; Mkfs and
// CreateImage make a new filesystem.
//
// An *FS is an io/fs.FS (with ReadDir, Stat, ReadLink and Lstat) over one
// subvolume of an image, crossing into nested subvolumes and snapshots where
// the directory tree links them. Opened files are *File values: io.ReaderAt,
// io.Reader and io.Seeker with SEEK_DATA / SEEK_HOLE. File data is verified
// against the csum tree unless Options.NoVerifyDataCsum is set. An FS is safe
// for concurrent use.
package gobtrfs

import (
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/datacsum"
	"github.com/gobtrfs/gobtrfs/internal/extentmap"
	"github.com/gobtrfs/gobtrfs/internal/fileread"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// FS is an open btrfs filesystem presenting one subvolume as its root.
type FS struct {
	info    *fsinfo.FSInfo
	devs    []blockdev.Device // closed by Close (the log replay's overlay when there is one)
	opts    Options
	root    node
	extents *extentmap.Cache
	csums   *datacsum.Tree   // nil without a csum tree
	data    *fileread.Engine // reads file extents: verified, other copy tried, cached
	warned  sync.Map         // warnings already given, by text key
	opened  time.Time

	treesMu sync.Mutex
	trees   map[ondisk.ObjectID]*ctree.Tree
}

var (
	_ fs.FS         = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadLinkFS = (*FS)(nil)
)

// Open opens the image file or block device at path.
func Open(path string, opts *Options) (*FS, error) { return OpenDevices([]string{path}, opts) }

// OpenDevices opens a filesystem of several devices (image files or block
// devices, in any order), read-only: each device is matched to the
// filesystem's device list by its superblock (fsid, devid, uuid). A
// missing device is named in a warning; what has a copy on the devices
// given reads as usual (a RAID1 with one device missing reads in full) and
// what has none fails with an error naming the missing device.
func OpenDevices(paths []string, opts *Options) (*FS, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("open: no device given")
	}
	var devs []blockdev.Device
	var files []*blockdev.File
	closeAll := func() {
		for _, d := range devs {
			d.Close()
		}
	}
	for _, p := range paths {
		dev, err := blockdev.OpenFile(p, true)
		if err != nil {
			closeAll()
			return nil, err // an *fs.PathError naming p already
		}
		devs = append(devs, dev)
		files = append(files, dev)
	}
	f, err := openDevices(devs, paths, opts)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("open %s: %w", strings.Join(paths, ", "), err)
	}
	for i, dev := range files {
		if h, busy := dev.InUse(); busy && !f.opts.NoInUseWarning {
			f.warn("in use "+paths[i], blockdev.InUseWarning(paths[i], h))
		}
	}
	return f, nil
}

// OpenReaderAt opens an image held by r, size bytes long.
func OpenReaderAt(r io.ReaderAt, size int64, opts *Options) (*FS, error) {
	return openDevices([]blockdev.Device{&blockdev.ReaderAt{R: r, N: size}}, nil, opts)
}

func openDevices(devs []blockdev.Device, names []string, opts *Options) (*FS, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	info, err := fsinfo.OpenDevices(devs, fsinfo.Options{ReadOnly: true, SuperMirror: o.SuperMirror,
		CacheBytes: o.TreeCacheBytes, Warn: o.Warn, DeviceNames: names})
	if err != nil {
		return nil, err
	}
	if info.Super.LogRoot != 0 {
		info, devs = replayLog(info, devs, o) // in memory; the image is not written
	}
	f := &FS{info: info, devs: devs, opts: o, trees: map[ondisk.ObjectID]*ctree.Tree{},
		extents: extentmap.New(o.ExtentCacheBytes), opened: time.Now()}
	f.data = fileread.New(info.R, fileread.Options{Cache: true, Warn: o.Warn})
	if t, err := info.Tree(ondisk.CsumTreeObjectID); err == nil {
		f.csums = &datacsum.Tree{T: t, SectorSize: info.Super.SectorSize, Type: info.Csum}
	} else if !o.NoVerifyDataCsum {
		f.warn("no csum tree", fmt.Sprintf("no csum tree (%v): data is not verified", err))
	}
	id, err := f.pickRoot()
	if err != nil {
		return nil, err
	}
	if _, err := f.tree(id); err != nil {
		return nil, fmt.Errorf("open subvolume %d: %w", id, err)
	}
	f.root = node{subvol: id, ino: ondisk.FirstFreeObjectID}
	return f, nil
}

// Close releases the image (every device).
func (f *FS) Close() error {
	var first error
	for _, d := range f.devs {
		if err := d.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// warn reports msg once per key.
func (f *FS) warn(key, msg string) {
	if _, dup := f.warned.LoadOrStore(key, true); dup {
		return
	}
	if f.opts.Warn != nil {
		f.opts.Warn(msg)
	}
}

// Warnings returns the notices the open collected (mirror fallbacks and the like).
func (f *FS) Warnings() []string { return f.info.Warnings() }

// SectorSize is the filesystem's sector size.
func (f *FS) SectorSize() uint32 { return f.info.Super.SectorSize }

// tree returns the B-tree of subvolume id, cached.
func (f *FS) tree(id ondisk.ObjectID) (*ctree.Tree, error) {
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
