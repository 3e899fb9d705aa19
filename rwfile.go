package gobtrfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/namei"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// RWFile is a file or directory of an RW opened by RW.Create, RW.OpenFile
// or RWFS.Open, as an *os.File is one of the host: io.Reader, io.ReaderAt,
// io.Writer, io.WriterAt, io.Seeker (with SeekData and SeekHole),
// io.Closer and fs.ReadDirFile. It names an inode, not a path: a rename
// keeps it, and every call sees the RW's current state, uncommitted
// changes included. Writes go through the RW's write path (RW.WriteAt)
// into the running transaction: they are durable after Sync, RW.Commit
// or RW.Close, not after RWFile.Close. Read, Write, Seek and ReadDir share
// an offset guarded by a mutex; ReadAt and WriteAt are safe for concurrent
// use.
type RWFile struct {
	w    *RW
	name string
	id   ondisk.InodeRef
	flag int

	mu      sync.Mutex
	off     int64
	dirEnts []fsops.Entry // a directory's entries, read on the first ReadDir
	dirRead bool
	closed  atomic.Bool
	// ra is Read's read-ahead window (as File's): small reads are served
	// from one larger read while the inode is unchanged (raKey).
	ra    []byte
	raOff int64
	raKey inodeVersion
}

// inodeVersion tells whether an inode changed: every change of its data
// or attributes bumps its sequence and ctime (fsops' touch), and a new
// inode of a reused number has another otime.
type inodeVersion struct {
	seq, transid, size uint64
	ctime, otime       item.Timespec
}

func versionOf(x *item.InodeItem) inodeVersion {
	return inodeVersion{x.Sequence, x.Transid, x.Size, x.Ctime, x.Otime}
}

var (
	_ fs.ReadDirFile     = (*RWFile)(nil)
	_ io.ReaderAt        = (*RWFile)(nil)
	_ io.WriterAt        = (*RWFile)(nil)
	_ io.ReadWriteSeeker = (*RWFile)(nil)
	_ io.Closer          = (*RWFile)(nil)
)

// errAppendWriteAt is WriteAt's error on a file opened O_APPEND (as *os.File).
var errAppendWriteAt = errors.New("WriteAt on a file opened with O_APPEND")

// Create creates or truncates the regular file name (mode 0644 when new)
// and opens it for reading and writing, as os.Create.
func (w *RW) Create(name string) (*RWFile, error) {
	return w.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
}

// OpenFile opens name as os.OpenFile does, following symlinks: flag is
// O_RDONLY, O_WRONLY or O_RDWR, or'd with O_CREATE (a missing regular file
// is made with perm's permission bits; through a dangling symlink, its
// target; "name/" is EISDIR), O_EXCL (with O_CREATE: name must not exist,
// not even as a symlink), O_TRUNC (a regular file opened for writing is
// emptied) and O_APPEND (every Write goes to the end of the file).
// Directories open read-only and without O_CREATE; other flags are
// ignored.
func (w *RW) OpenFile(name string, flag int, perm fs.FileMode) (*RWFile, error) {
	id, err := w.openFlags(name, flag, perm)
	if err != nil {
		return nil, pathError("open", name, err)
	}
	return &RWFile{w: w, name: name, id: id, flag: flag}, nil
}

func (w *RW) openFlags(name string, flag int, perm fs.FileMode) (ondisk.InodeRef, error) {
	for links := 0; ; links++ {
		id, next, err := w.openStep(name, flag, perm)
		if next == "" {
			return id, err
		}
		if links >= namei.MaxSymlinks {
			return id, syscall.ELOOP
		}
		name = next // O_CREATE through a dangling symlink: create its target
	}
}

// openStep is one try of openFlags: next is the path to try instead when
// name is a dangling symlink that O_CREATE (without O_EXCL) creates the
// target of, as open(2) does.
func (w *RW) openStep(name string, flag int, perm fs.FileMode) (id ondisk.InodeRef, next string, err error) {
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	id, x, err := w.lookup(name, true)
	switch {
	case errors.Is(err, syscall.ENOENT) && flag&os.O_CREATE != 0:
		if strings.HasSuffix(name, "/") {
			return id, "", syscall.EISDIR // open(2): O_CREAT of "name/"
		}
		if flag&os.O_EXCL == 0 {
			if lid, lx, lerr := w.lookup(name, false); lerr == nil && lx.Mode&item.SIFMT == item.SIFLNK {
				target, rerr := w.f.Readlink(lid)
				if rerr != nil {
					return id, "", rerr
				}
				if !strings.HasPrefix(target, "/") {
					target = name[:strings.LastIndex(name, "/")+1] + target
				}
				return id, target, nil
			}
		}
		dir, base, perr := w.parent(name)
		if perr != nil {
			return id, "", perr
		}
		id, err = w.f.Create(dir, base, syscall.S_IFREG|uint32(perm.Perm()), 0, 0, 0)
		return id, "", err
	case err != nil:
		return id, "", err
	case flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return id, "", syscall.EEXIST
	case x.Mode&item.SIFMT == item.SIFDIR && (writable || flag&os.O_CREATE != 0):
		return id, "", syscall.EISDIR
	case writable && flag&os.O_TRUNC != 0 && x.Mode&item.SIFMT == item.SIFREG && x.Size > 0:
		_, err = w.f.Setattr(id, fsops.SetAttr{Valid: fsops.SetSize, Size: 0})
	}
	return id, "", err
}

// ready fails on a closed file, and writes out what RW.WriteAt gathered.
func (f *RWFile) ready(op string) error {
	if f.closed.Load() {
		return pathError(op, f.name, fs.ErrClosed)
	}
	// What RW.WriteAt gathered goes out first, so this file sees it and
	// its writes land after it.
	return f.w.settle()
}

func (f *RWFile) canRead() bool  { return f.flag&os.O_WRONLY == 0 }
func (f *RWFile) canWrite() bool { return f.flag&(os.O_WRONLY|os.O_RDWR) != 0 }

// Name is the name the file was opened with.
func (f *RWFile) Name() string { return f.name }

// Stat returns the file's current FileInfo; Sys() is a *Stat.
func (f *RWFile) Stat() (fs.FileInfo, error) {
	if err := f.ready("stat"); err != nil {
		return nil, err
	}
	x, err := f.w.f.Stat(f.id)
	if err != nil {
		return nil, pathError("stat", f.name, err)
	}
	return &fileInfo{name: path.Base(f.name), st: newStat(f.id, &x)}, nil
}

// ReadAt reads len(p) bytes at off; at end of file it returns io.EOF with
// the bytes read.
func (f *RWFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.ready("read"); err != nil {
		return 0, err
	}
	if !f.canRead() {
		return 0, pathError("read", f.name, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathError("read", f.name, syscall.EINVAL)
	}
	b, err := f.w.f.ReadAt(f.id, uint64(off), len(p))
	n := copy(p, b)
	if err != nil {
		return n, pathError("read", f.name, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Read reads from the current offset.
func (f *RWFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) == 0 {
		return 0, f.ready("read")
	}
	if len(p) < readAheadSize && f.canRead() && !f.closed.Load() {
		if n, ok := f.readAhead(p); ok {
			f.off += int64(n)
			return n, nil
		}
	}
	n, err := f.ReadAt(p, f.off)
	f.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// readAhead serves a small Read from the window, refilling it from the
// current offset when it does not hold it or the inode changed since.
// The version is read before the data, so a change in between only makes
// the next call refill.
func (f *RWFile) readAhead(p []byte) (int, bool) {
	if f.w.settle() != nil {
		return 0, false // ReadAt reports it
	}
	x, err := f.w.f.Stat(f.id)
	if err != nil || x.Mode&item.SIFMT != item.SIFREG || f.off >= int64(x.Size) {
		return 0, false
	}
	v := versionOf(&x)
	if v != f.raKey || f.off < f.raOff || f.off >= f.raOff+int64(len(f.ra)) {
		b, err := f.w.f.ReadAt(f.id, uint64(f.off), readAheadSize)
		if err != nil || len(b) == 0 {
			f.ra = nil
			return 0, false
		}
		f.ra, f.raOff, f.raKey = b, f.off, v
	}
	return copy(p, f.ra[f.off-f.raOff:]), true
}

// WriteAt writes p at off (the file grows as needed; a gap before off is a
// hole). It fails on a file opened O_APPEND, as *os.File's does.
func (f *RWFile) WriteAt(p []byte, off int64) (int, error) {
	if f.flag&os.O_APPEND != 0 {
		return 0, pathError("write", f.name, errAppendWriteAt)
	}
	return f.writeAt(p, off)
}

func (f *RWFile) writeAt(p []byte, off int64) (int, error) {
	if err := f.ready("write"); err != nil {
		return 0, err
	}
	if !f.canWrite() {
		return 0, pathError("write", f.name, syscall.EBADF)
	}
	if off < 0 {
		return 0, pathError("write", f.name, syscall.EINVAL)
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := f.w.f.WriteAt(f.id, uint64(off), p)
	if err != nil {
		return n, pathError("write", f.name, err)
	}
	return n, nil
}

// Write writes p at the current offset (at the end of the file with
// O_APPEND) and moves the offset past it.
func (f *RWFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flag&os.O_APPEND != 0 {
		if err := f.ready("write"); err != nil { // the size after what RW.WriteAt gathered
			return 0, err
		}
		x, err := f.w.f.Stat(f.id)
		if err != nil {
			return 0, pathError("write", f.name, err)
		}
		f.off = int64(x.Size)
	}
	n, err := f.writeAt(p, f.off)
	f.off += int64(n)
	return n, err
}

// WriteString is Write of the bytes of s.
func (f *RWFile) WriteString(s string) (int, error) { return f.Write([]byte(s)) }

// Seek sets the offset for the next Read or Write: io.SeekStart,
// io.SeekCurrent and io.SeekEnd, and SeekData and SeekHole with lseek(2)
// semantics (ENXIO at or past the end of file).
func (f *RWFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ready("seek"); err != nil {
		return 0, err
	}
	var pos int64
	switch whence {
	case io.SeekStart:
		pos = offset
	case io.SeekCurrent:
		pos = f.off + offset
	case io.SeekEnd:
		x, err := f.w.f.Stat(f.id)
		if err != nil {
			return 0, pathError("seek", f.name, err)
		}
		pos = int64(x.Size) + offset
	case SeekData, SeekHole:
		p, err := f.w.f.SeekData(f.id, offset, whence == SeekData)
		if err != nil {
			return 0, pathError("seek", f.name, err)
		}
		pos = p
	default:
		return 0, pathError("seek", f.name, errBadWhere)
	}
	if pos < 0 {
		return 0, pathError("seek", f.name, errBadWhere)
	}
	f.off = pos
	if whence != io.SeekCurrent || offset != 0 {
		f.dirEnts, f.dirRead = nil, false // a directory is read again from the start
	}
	return pos, nil
}

// Truncate changes the file's size (a regular file opened for writing).
func (f *RWFile) Truncate(size int64) error {
	if err := f.ready("truncate"); err != nil {
		return err
	}
	if !f.canWrite() {
		return pathError("truncate", f.name, syscall.EBADF)
	}
	if size < 0 {
		return pathError("truncate", f.name, syscall.EINVAL)
	}
	if _, err := f.w.f.Setattr(f.id, fsops.SetAttr{Valid: fsops.SetSize, Size: uint64(size)}); err != nil {
		return pathError("truncate", f.name, err)
	}
	return nil
}

// Sync makes the file durable as RW.Fsync does (through the log tree
// where it can, else with a commit).
func (f *RWFile) Sync() error {
	if err := f.ready("sync"); err != nil {
		return err
	}
	if err := f.w.f.Fsync(f.id); err != nil {
		return pathError("fsync", f.name, err)
	}
	return nil
}

// Close closes the file; a second Close fails with fs.ErrClosed. What was
// written stays in the RW's running transaction (see Sync and RW.Commit).
func (f *RWFile) Close() error {
	if f.closed.Swap(true) {
		return pathError("close", f.name, fs.ErrClosed)
	}
	return nil
}

// ReadDir reads a directory's entries in on-disk (index) order, as
// fs.ReadDirFile: up to n entries with io.EOF at the end when n > 0, all
// remaining ones when n <= 0. The entries are those of the first call;
// a Seek (other than Seek(0, io.SeekCurrent)) reads them again.
func (f *RWFile) ReadDir(n int) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.ready("readdir"); err != nil {
		return nil, err
	}
	if !f.dirRead {
		ents, err := f.w.f.ReadDir(f.id)
		if err != nil {
			return nil, pathError("readdir", f.name, err)
		}
		f.dirEnts, f.dirRead = ents, true
	}
	take := len(f.dirEnts)
	if n > 0 {
		take = min(n, take)
	}
	out := make([]fs.DirEntry, take)
	for i, e := range f.dirEnts[:take] {
		out[i] = &rwDirEntry{w: f.w, dir: f.id, e: e}
	}
	f.dirEnts = f.dirEnts[take:]
	if n > 0 && take == 0 {
		return nil, io.EOF
	}
	return out, nil
}

// rwDirEntry is one entry of an RW directory.
type rwDirEntry struct {
	w   *RW
	dir ondisk.InodeRef
	e   fsops.Entry
}

func (d *rwDirEntry) Name() string      { return d.e.Name }
func (d *rwDirEntry) IsDir() bool       { return d.Type().IsDir() }
func (d *rwDirEntry) String() string    { return fs.FormatDirEntry(d) }
func (d *rwDirEntry) Type() fs.FileMode { return rwEntryType(&d.e) }

func rwEntryType(e *fsops.Entry) fs.FileMode {
	if e.IsSubvol() {
		return fs.ModeDir
	}
	return ftMode(e.Type)
}

// Info stats the entry's inode now (a symlink is not followed), with what
// RW.WriteAt gathered written first.
func (d *rwDirEntry) Info() (fs.FileInfo, error) {
	if err := d.w.settle(); err != nil {
		return nil, err
	}
	id := d.e.Target(d.dir.Root)
	x, err := d.w.f.Stat(id)
	if err != nil {
		return nil, pathError("stat", d.e.Name, err)
	}
	return &fileInfo{name: d.e.Name, st: newStat(id, &x)}, nil
}
