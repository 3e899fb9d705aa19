// Package gobtrfs reads btrfs filesystem images in pure Go.
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
	dev     blockdev.Device
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

var (
	_ fs.FS         = (*FS)(nil)
	_ fs.ReadDirFS  = (*FS)(nil)
	_ fs.StatFS     = (*FS)(nil)
	_ fs.ReadLinkFS = (*FS)(nil)
)

// Open opens the image file or block device at path.
func Open(path string, opts *Options) (*FS, error) {
	dev, err := blockdev.OpenFile(path, true)
	if err != nil {
		return nil, err // an *fs.PathError naming path already
	}
	f, err := openDevice(dev, opts)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if h, busy := dev.InUse(); busy && !f.opts.NoInUseWarning {
		f.warn("in use", blockdev.InUseWarning(path, h))
	}
	return f, nil
}

// OpenReaderAt opens an image held by r, size bytes long.
func OpenReaderAt(r io.ReaderAt, size int64, opts *Options) (*FS, error) {
	return openDevice(&blockdev.ReaderAt{R: r, N: size}, opts)
}

func openDevice(dev blockdev.Device, opts *Options) (*FS, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	info, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true, SuperMirror: o.SuperMirror,
		CacheBytes: o.TreeCacheBytes, Warn: o.Warn})
	if err != nil {
		return nil, err
	}
	if info.Super.LogRoot != 0 {
		info, dev = replayLog(info, dev, o) // in memory; the image is not written
	}
	f := &FS{info: info, dev: dev, opts: o, trees: map[ondisk.ObjectID]*ctree.Tree{},
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
	f.root = ondisk.InodeRef{Root: id, Ino: ondisk.FirstFreeObjectID}
	return f, nil
}

// Close releases the image.
func (f *FS) Close() error { return f.dev.Close() }

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
