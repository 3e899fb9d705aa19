package fsread

import (
	"io/fs"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/extentmap"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Lookup finds name in directory dir: the entry and the inode it names.
// mirrors btrfs_lookup_dentry
func (f *Engine) Lookup(dir ondisk.InodeRef, name string) (inode.DirEntry, ondisk.InodeRef, error) {
	if dir.IsEmptySubvolDir() {
		return inode.DirEntry{}, ondisk.InodeRef{}, fs.ErrNotExist
	}
	t, err := f.Tree(dir.Root)
	if err != nil {
		return inode.DirEntry{}, ondisk.InodeRef{}, err
	}
	e, err := inode.Lookup(t, dir.Ino, name)
	if err != nil {
		return inode.DirEntry{}, ondisk.InodeRef{}, err
	}
	n, err := f.Child(dir, e)
	return e, n, err
}

// ReadDir calls fn for the entries of directory dir from DIR_INDEX from on,
// in index order, with what each names (or why that could not be
// resolved), until fn returns false; it returns the index to continue from.
// Entries no directory can hold are skipped with a warning.
func (f *Engine) ReadDir(dir ondisk.InodeRef, from uint64, fn func(e inode.DirEntry, target ondisk.InodeRef, err error) bool) (uint64, error) {
	if dir.IsEmptySubvolDir() {
		return from, nil
	}
	t, err := f.Tree(dir.Root)
	if err != nil {
		return from, err
	}
	next := from
	err = inode.ReadDir(t, dir.Ino, from, func(e inode.DirEntry) bool {
		target, err := f.Child(dir, e)
		if !fn(e, target, err) {
			return false
		}
		next = e.Index + 1
		return true
	}, func(err error) { f.Warn(err.Error(), "skipped directory entry: "+err.Error()) })
	return next, err
}

// Readlink reads the target of symlink n (x is its inode item).
func (f *Engine) Readlink(n ondisk.InodeRef, x *item.InodeItem) (string, error) {
	t, err := f.Tree(n.Root)
	if err != nil {
		return "", err
	}
	e, err := inode.SymlinkTarget(t, n.Ino)
	if err != nil {
		return "", err
	}
	data, err := f.inlineData(n, &e.FileExtentItem)
	if err != nil {
		return "", err
	}
	if x.Size < uint64(len(data)) {
		data = data[:x.Size]
	}
	return string(data), nil
}

// Xattrs returns n's extended attributes, in tree order.
func (f *Engine) Xattrs(n ondisk.InodeRef) ([]inode.Xattr, error) {
	if n.IsEmptySubvolDir() {
		return nil, nil
	}
	t, err := f.Tree(n.Root)
	if err != nil {
		return nil, err
	}
	return inode.Xattrs(t, n.Ino)
}

// GetXattr returns the value of n's attribute name; a missing one satisfies
// errors.Is(err, fs.ErrNotExist).
func (f *Engine) GetXattr(n ondisk.InodeRef, name string) ([]byte, error) {
	if n.IsEmptySubvolDir() {
		return nil, fs.ErrNotExist
	}
	t, err := f.Tree(n.Root)
	if err != nil {
		return nil, err
	}
	return inode.GetXattr(t, n.Ino, name)
}

// SeekData returns the first offset >= off of n (x is its inode item) that
// holds data (data) or lies in a hole (!data): lseek's SEEK_DATA and
// SEEK_HOLE. ENXIO at or past the end and for directories; holes and
// prealloc are holes.
func (f *Engine) SeekData(n ondisk.InodeRef, x *item.InodeItem, off int64, data bool) (int64, error) {
	size := int64(x.Size)
	if off < 0 || off >= size || x.Mode&item.SIFMT == item.SIFDIR {
		return 0, syscall.ENXIO
	}
	for pos := uint64(off); pos < uint64(size); {
		e, err := f.mapping(n, pos)
		if err != nil {
			return 0, err
		}
		if e.End <= pos {
			return 0, corruptf("%v: extent map [%d, %d) does not advance past %d", n, e.Start, e.End, pos)
		}
		isData := e.Kind == extentmap.Regular || e.Kind == extentmap.Inline
		if isData == data {
			return int64(pos), nil
		}
		pos = e.End
	}
	if data {
		return 0, syscall.ENXIO
	}
	return size, nil
}
