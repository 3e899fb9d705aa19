package gobtrfs

import (
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Whence values for Seek beyond io.SeekStart/Current/End, as lseek(2).
const (
	SeekData = 3 // SEEK_DATA: the next offset >= off holding data
	SeekHole = 4 // SEEK_HOLE: the next offset >= off in a hole (EOF counts as one)
)

// File is an open file or directory. ReadAt is safe for concurrent use;
// Read, Seek and ReadDir share an offset guarded by a mutex.
type File struct {
	fs    *FS
	name  string
	n     ondisk.InodeRef
	inode item.InodeItem

	mu      sync.Mutex
	off     int64
	dirNext uint64 // next DIR_INDEX index for ReadDir
	closed  atomic.Bool
	// ra is Read's read-ahead window: small sequential reads are served
	// from one larger verified read instead of a disk read and a checksum
	// per call.
	ra    []byte
	raOff int64
}

// readAheadSize is the window Read fills for reads smaller than it.
const readAheadSize = 128 << 10

var (
	_ fs.File        = (*File)(nil)
	_ fs.ReadDirFile = (*File)(nil)
	_ io.ReaderAt    = (*File)(nil)
	_ io.Seeker      = (*File)(nil)
)

func (f *FS) newFile(name string, n ondisk.InodeRef, x item.InodeItem) *File {
	return &File{fs: f, name: name, n: n, inode: x}
}

func (f *File) isDir() bool { return f.inode.Mode&item.SIFMT == item.SIFDIR }

// errIfClosed returns the error of op after the file's or its FS's Close.
func (f *File) errIfClosed(op string) error {
	if f.closed.Load() || f.fs.closed.Load() {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	return nil
}

// Name is the name the file was opened with.
func (f *File) Name() string { return f.name }

// Stat returns the file's FileInfo; Sys() is a *Stat.
func (f *File) Stat() (fs.FileInfo, error) {
	if err := f.errIfClosed("stat"); err != nil {
		return nil, err
	}
	return &fileInfo{name: baseName(f.name), st: newStat(f.n, &f.inode)}, nil
}

// Close marks the file closed. Cached extent mappings stay in the
// filesystem-wide cache (bounded by its LRU) for the next open.
func (f *File) Close() error {
	if f.closed.Swap(true) {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	return nil
}

// ReadAt reads len(p) bytes at off; at end of file it returns io.EOF with the bytes read.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if err := f.errIfClosed("read"); err != nil {
		return 0, err
	}
	if f.isDir() {
		return 0, pathErr("read", f.name, errIsDir)
	}
	if off < 0 {
		return 0, pathErr("read", f.name, errors.New("negative offset"))
	}
	size := int64(f.inode.Size)
	if off >= size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := p
	if int64(len(p)) > size-off {
		want = p[:size-off]
	}
	n, err := f.fs.e.ReadData(f.n, &f.inode, want, uint64(off))
	if err != nil {
		return n, pathErr("read", f.name, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Read reads from the current offset.
func (f *File) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errIfClosed("read"); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.off >= f.raOff && f.off < f.raOff+int64(len(f.ra)) {
		n := copy(p, f.ra[f.off-f.raOff:])
		f.off += int64(n)
		return n, nil
	}
	if len(p) < readAheadSize && !f.isDir() && f.off < int64(f.inode.Size) {
		buf := make([]byte, readAheadSize)
		if cap(f.ra) == readAheadSize {
			buf = f.ra[:readAheadSize]
		}
		n, err := f.ReadAt(buf, f.off)
		if err != nil && err != io.EOF {
			f.ra = f.ra[:0]
			return 0, err
		}
		f.ra, f.raOff = buf[:n], f.off
		n = copy(p, f.ra)
		f.off += int64(n)
		return n, nil
	}
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 && n == len(p) {
		err = nil
	}
	return n, err
}

// Seek sets the offset. Besides io.SeekStart/Current/End it supports
// SeekData and SeekHole with lseek(2) semantics: offsets at or past the end
// of file, and SeekData with no data after off, fail with ENXIO. Preallocated
// extents count as holes, as on Linux.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errIfClosed("seek"); err != nil {
		return 0, err
	}
	var pos int64
	switch whence {
	case io.SeekStart:
		pos = offset
	case io.SeekCurrent:
		pos = f.off + offset
	case io.SeekEnd:
		pos = int64(f.inode.Size) + offset
	case SeekData, SeekHole:
		p, err := f.seekDataHole(offset, whence == SeekData)
		if err != nil {
			return 0, pathErr("seek", f.name, err)
		}
		pos = p
	default:
		return 0, pathErr("seek", f.name, errBadWhere)
	}
	if pos < 0 {
		return 0, pathErr("seek", f.name, errBadWhere)
	}
	f.off = pos
	return pos, nil
}

// SeekData returns the first offset >= off holding data (io.EOF-free
// variant of Seek(off, SeekData) that leaves the offset alone).
func (f *File) SeekData(off int64) (int64, error) { return f.seekDataHole(off, true) }

// SeekHole returns the first offset >= off in a hole or at end of file.
func (f *File) SeekHole(off int64) (int64, error) { return f.seekDataHole(off, false) }

func (f *File) seekDataHole(off int64, data bool) (int64, error) {
	if err := f.errIfClosed("seek"); err != nil {
		return 0, err
	}
	return f.fs.e.SeekData(f.n, &f.inode, off, data)
}

// ReadDir reads the directory's entries in on-disk (index) order: up to n
// entries with io.EOF at the end when n > 0, all remaining ones when n <= 0.
func (f *File) ReadDir(n int) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errIfClosed("readdir"); err != nil {
		return nil, err
	}
	if !f.isDir() {
		return nil, pathErr("readdir", f.name, errNotDir)
	}
	limit := n
	if n <= 0 {
		limit = -1
	}
	var out []fs.DirEntry
	next, err := f.fs.readDirFrom(f.n, f.dirNext, limit, func(e *DirEntry) { out = append(out, e) })
	f.dirNext = next
	if err != nil {
		return out, pathErr("readdir", f.name, err)
	}
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

// CachedExtents returns how many extent mappings of this inode are cached.
func (f *File) CachedExtents() int { return f.fs.e.Extents().Entries(f.n) }

// Sys returns the file's *Stat.
func (f *File) Sys() *Stat { return newStat(f.n, &f.inode) }

func baseName(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[i+1:]
		}
	}
	return name
}

// ReadLink returns the target if the file is a symlink.
func (f *File) ReadLink() (string, error) {
	if err := f.errIfClosed("readlink"); err != nil {
		return "", err
	}
	if f.inode.Mode&item.SIFMT != item.SIFLNK {
		return "", pathErr("readlink", f.name, errNotLink)
	}
	t, err := f.fs.readlink(f.n, &f.inode)
	if err != nil {
		return "", pathErr("readlink", f.name, err)
	}
	return t, nil
}

// Xattrs returns the file's extended attributes sorted by name.
func (f *File) Xattrs() ([]Xattr, error) {
	if err := f.errIfClosed("listxattr"); err != nil {
		return nil, err
	}
	xs, err := f.fs.nodeXattrs(f.n)
	if err != nil {
		return nil, pathErr("listxattr", f.name, err)
	}
	out := make([]Xattr, len(xs))
	for i, x := range xs {
		out[i] = Xattr{x.Name, x.Value}
	}
	slices.SortFunc(out, func(a, b Xattr) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
