package gobtrfs

import (
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// DirEntry is one directory entry; it implements fs.DirEntry. Info reads the
// entry's own inode (a symlink is not followed).
type DirEntry struct {
	fs     *FS
	dir    ondisk.InodeRef
	e      inode.DirEntry
	target ondisk.InodeRef
	err    error // resolving the entry failed; reported by Info
}

var _ fs.DirEntry = (*DirEntry)(nil)

// Name is the entry's name.
func (d *DirEntry) Name() string { return d.e.Name }

// IsDir reports whether the entry is a directory (or a subvolume).
func (d *DirEntry) IsDir() bool { return d.Type().IsDir() }

// Type returns the type bits recorded in the directory entry.
func (d *DirEntry) Type() fs.FileMode {
	if d.e.IsSubvol() {
		return fs.ModeDir
	}
	return ftMode(d.e.Type)
}

// Info returns the entry's FileInfo, with a *Stat as Sys().
func (d *DirEntry) Info() (fs.FileInfo, error) {
	if err := d.fs.errIfClosed("stat", d.e.Name); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, pathErr("stat", d.e.Name, d.err)
	}
	fi, err := d.fs.statNode(d.e.Name, d.target)
	if err != nil {
		return nil, pathErr("stat", d.e.Name, err)
	}
	return fi, nil
}

// Subvolume reports whether the entry is the root of another subvolume (or
// the placeholder of one a snapshot did not include), and its ID.
func (d *DirEntry) Subvolume() (id uint64, ok bool) {
	if !d.e.IsSubvol() {
		return 0, false
	}
	return uint64(d.e.Location.ObjectID), true
}

// readDir calls fn for up to n entries (all if n < 0) of directory dir from
// DIR_INDEX index from on, in index order; it returns the next index.
func (f *FS) readDir(dir ondisk.InodeRef, from uint64, n int, fn func(*DirEntry)) error {
	_, err := f.readDirFrom(dir, from, n, fn)
	return err
}

func (f *FS) readDirFrom(dir ondisk.InodeRef, from uint64, n int, fn func(*DirEntry)) (uint64, error) {
	count := 0
	return f.e.ReadDir(dir, from, func(e inode.DirEntry, target ondisk.InodeRef, err error) bool {
		if n >= 0 && count >= n {
			return false
		}
		fn(&DirEntry{fs: f, dir: dir, e: e, target: target, err: err})
		count++
		return true
	})
}

// Open opens the entry itself without a path lookup; a symlink is not
// followed (its File reads as the target text). Walkers such as restore use
// it to visit a tree without resolving each path from the root.
func (d *DirEntry) Open() (*File, error) {
	if err := d.fs.errIfClosed("open", d.e.Name); err != nil {
		return nil, err
	}
	if d.err != nil {
		return nil, pathErr("open", d.e.Name, d.err)
	}
	x, err := d.fs.inode(d.target)
	if err == nil {
		err = d.fs.checkLink(d.dir, d.e, d.target, &x)
	}
	if err != nil {
		return nil, pathErr("open", d.e.Name, err)
	}
	return d.fs.newFile(d.e.Name, d.target, x), nil
}
