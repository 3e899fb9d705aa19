// Package gobtrfs reads and writes btrfs filesystem images in pure Go (no
// cgo, no root, no kernel mount): images that the Linux kernel mounts, and
// images the kernel wrote.
//
// Reading: Open (or OpenDevices for a filesystem of several devices, or
// OpenReaderAt) gives an *FS, a read-only io/fs.FS (with ReadDir, Stat,
// ReadFile, ReadLink and Lstat) over one subvolume, crossing into nested
// subvolumes and snapshots where the directory tree links them. Its files
// are *File values: io.Reader, io.ReaderAt and io.Seeker with SeekData and
// SeekHole. File data is verified against the csum tree unless
// Options.NoVerifyDataCsum is set; metadata always is. An FS is safe for
// concurrent use; after Close every call fails with fs.ErrClosed.
//
// Writing: Mkfs makes a new filesystem with mkfs.btrfs's options (Rootdir
// fills it from a host directory), CreateImage an empty one with the
// defaults. OpenRW opens an image for changes (an *RW): files, directories,
// links, subvolumes and snapshots, xattrs and ACLs, reflinks, fallocate,
// fsync through the log tree. RW.Create and RW.OpenFile give *RWFile
// values (io.Writer, io.WriterAt, io.Reader, io.ReaderAt, io.Seeker,
// io.Closer); RW.Stat, RW.ReadDir and RW.FS show the current state,
// uncommitted changes included. Every change is in the running transaction
// until RW.Commit or RW.Close (or a commit timer, RWOptions.CommitInterval);
// one writer at a time holds an image (ErrLocked).
//
// Errors wrap their cause with the operation and the path or address; test
// them with errors.Is against ErrNotBtrfs, ErrCorrupt, ErrLocked,
// ErrMissingDevice and the io/fs errors (fs.ErrNotExist, fs.ErrExist,
// fs.ErrClosed), or errors.As with *DataError.
package gobtrfs

import (
	"fmt"
	"github.com/gobtrfs/gobtrfs/internal/fsread"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"io"
	"io/fs"
	"strings"
	"sync/atomic"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// FS is an open btrfs filesystem presenting one subvolume as its root: the
// io/fs door over the read engine (internal/fsread), which it reaches by
// resolving paths to inodes.
type FS struct {
	e      *fsread.Engine
	opts   Options
	root   ondisk.InodeRef
	closed atomic.Bool
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
// what has none fails with an error naming the missing device
// (errors.Is(err, ErrMissingDevice)).
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
	eo, err := o.engine()
	if err != nil {
		return nil, err
	}
	eo.DeviceNames = names
	e, err := fsread.OpenDevices(devs, eo)
	if err != nil {
		return nil, err
	}
	return &FS{e: e, opts: o, root: e.Root()}, nil
}

// engine returns the options of the read engine.
func (o *Options) engine() (fsread.Options, error) {
	mirror, err := o.superMirror()
	if err != nil {
		return fsread.Options{}, err
	}
	return fsread.Options{NoVerifyDataCsum: o.NoVerifyDataCsum, SuperMirror: mirror, Warn: o.Warn,
		ExtentCacheBytes: o.ExtentCacheBytes, TreeCacheBytes: o.TreeCacheBytes, SubvolID: o.SubvolID,
		Subvol: o.Subvol, NoLogReplay: o.NoLogReplay}, nil
}

// superMirror turns SuperMirror (0-based, as btrfs-progs) into the
// engines' form: 0 picks the primary with fallback, N >= 1 forces copy N-1.
func (o *Options) superMirror() (int, error) {
	n := o.SuperMirror
	if n < 0 || n >= len(ondisk.SuperMirrorOffsets) {
		return 0, fmt.Errorf("open: superblock mirror %d: only 0..%d exist", n, len(ondisk.SuperMirrorOffsets)-1)
	}
	if n == 0 && !o.ForceSuperMirror {
		return 0, nil
	}
	return n + 1, nil
}

// Close releases the image. Every method of the FS and of its open files
// called after Close fails with an error matching fs.ErrClosed (a second
// Close included).
func (f *FS) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", ".", fs.ErrClosed)
	}
	return f.e.Close()
}

// errIfClosed returns the error of op on name after Close, else nil.
func (f *FS) errIfClosed(op, name string) error {
	if f.closed.Load() {
		return pathErr(op, name, fs.ErrClosed)
	}
	return nil
}

// warn reports msg once per key.
func (f *FS) warn(key, msg string) { f.e.Warn(key, msg) }

// Warnings returns the notices the open collected (mirror fallbacks and the like).
func (f *FS) Warnings() []string { return f.e.Info().Warnings() }

// SectorSize is the filesystem's sector size.
func (f *FS) SectorSize() uint32 { return f.e.SectorSize() }

// The engine's inode-level reads, as the door's methods use them.
func (f *FS) inode(n ondisk.InodeRef) (item.InodeItem, error) { return f.e.Inode(n) }

func (f *FS) checkLink(dir ondisk.InodeRef, e inode.DirEntry, target ondisk.InodeRef, x *item.InodeItem) error {
	return f.e.CheckLink(dir, e, target, x)
}

func (f *FS) lookupEntry(dir ondisk.InodeRef, name string) (inode.DirEntry, ondisk.InodeRef, error) {
	return f.e.Lookup(dir, name)
}

func (f *FS) readlink(n ondisk.InodeRef, x *item.InodeItem) (string, error) {
	return f.e.Readlink(n, x)
}

func (f *FS) nodeXattrs(n ondisk.InodeRef) ([]inode.Xattr, error) { return f.e.Xattrs(n) }
