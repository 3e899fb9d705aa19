package fusefs

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// The read half of a read-write mount: rwState is the backend, over fsops.

var _ backend = (*rwState)(nil)

func (r *rwState) Root() ondisk.InodeRef { return r.root }

func (r *rwState) Getattr(id ondisk.InodeRef) (attr, error) {
	x, err := r.ops.Stat(id)
	if err != nil {
		return attr{}, err
	}
	return attrOfItem(&x), nil
}

func (r *rwState) Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, attr, error) {
	f, x, err := r.ops.Lookup(dir, name)
	if err == nil && x.Mode&item.SIFMT == item.SIFDIR {
		// a directory is entered only through its one link (no loops)
		err = r.ops.CheckLink(dir, name, f)
	}
	if err != nil {
		return ondisk.InodeRef{}, attr{}, err
	}
	return f, attrOfItem(&x), nil
}

// lookupOverlay is Lookup with buffered writes counted.
func (r *rwState) lookupOverlay(dir ondisk.InodeRef, name string) (ondisk.InodeRef, attr, error) {
	r.wbMu.RLock()
	defer r.wbMu.RUnlock()
	id, a, err := r.Lookup(dir, name)
	if err == nil {
		r.overlay(id, &a)
	}
	return id, a, err
}

func (r *rwState) ReadDir(dir ondisk.InodeRef, from uint64, fn func(dirent) bool) error {
	es, err := r.ops.ListDir(dir, func(err error) { r.m.logf("readdir %v: skipping entry: %v", dir, err) })
	if errors.Is(err, diskio.ErrCorrupt) {
		// listed past the blocks that could not be read
		err = partialDir(dir, len(es) > 0, err, func(s string) { r.m.logf("%s", s) })
	}
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Index < from {
			continue
		}
		if !fn(dirent{Name: e.Name, Index: e.Index, Mode: modeOfFT(e.Type, e.IsSubvol()), ID: e.Target(dir.Root)}) {
			break
		}
	}
	return nil
}

// modeOfFT converts a BTRFS_FT_* type to S_IF* bits.
func modeOfFT(t uint8, subvol bool) uint32 {
	if subvol {
		return syscall.S_IFDIR
	}
	switch t {
	case item.FTDir:
		return syscall.S_IFDIR
	case item.FTChrdev:
		return syscall.S_IFCHR
	case item.FTBlkdev:
		return syscall.S_IFBLK
	case item.FTFifo:
		return syscall.S_IFIFO
	case item.FTSock:
		return syscall.S_IFSOCK
	case item.FTSymlink:
		return syscall.S_IFLNK
	}
	return syscall.S_IFREG
}

func (r *rwState) ReadAt(id ondisk.InodeRef, p []byte, off int64) (int, error) {
	data, err := r.ops.ReadAt(id, uint64(off), len(p))
	return copy(p, data), err
}

func (r *rwState) Readlink(id ondisk.InodeRef) (string, error) { return r.ops.Readlink(id) }

func (r *rwState) ListXattr(id ondisk.InodeRef) ([]string, error) { return r.ops.ListXattr(id) }

// capsXattr is asked for before every write (the kernel's
// file_remove_privs); a negative answer is cached per inode.
const capsXattr = "security.capability"

func (r *rwState) GetXattr(id ondisk.InodeRef, name string) ([]byte, error) {
	if name == capsXattr {
		if _, ok := r.noCaps.Load(id); ok {
			return nil, syscall.ENODATA
		}
	}
	v, err := r.ops.GetXattr(id, name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODATA) {
		if name == capsXattr {
			r.noCaps.Store(id, struct{}{})
		}
		return nil, syscall.ENODATA
	}
	return v, err
}

// SeekData sees the running transaction; callers write the inode back first.
func (r *rwState) SeekData(id ondisk.InodeRef, off int64, data bool) (int64, error) {
	return r.ops.SeekData(id, off, data)
}

func (r *rwState) Statfs() (statfs, error) { return r.statfs() }

func (r *rwState) Forget(id ondisk.InodeRef) { r.noCaps.Delete(id) }

func (r *rwState) Close() error { return r.close() }
