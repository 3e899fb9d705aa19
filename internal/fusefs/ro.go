package fusefs

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsread"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// roBackend serves a read-only mount from the read engine (internal/fsread),
// by inode identity: names are looked up as the bytes they are, and a
// listing continues from a DIR_INDEX.
type roBackend struct {
	e    *fsread.Engine
	root ondisk.InodeRef
	sf   statfs
	warn func(string)

	mu    sync.Mutex
	files map[ondisk.InodeRef]*item.InodeItem // inodes read for ReadAt and SEEK_DATA (a read-only tree never changes)
}

// openRO opens image read-only through the read engine.
func openRO(image string, o *Options, warn func(string)) (*roBackend, error) {
	dev, err := blockdev.OpenFile(image, true)
	if err != nil {
		return nil, err
	}
	e, err := fsread.Open(dev, fsread.Options{Subvol: o.Subvol, SubvolID: o.SubvolID, Warn: warn,
		NoVerifyDataCsum: o.NoDataCsum, NoLogReplay: o.NoLogReplay})
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("open %s: %w", image, err)
	}
	if h, busy := dev.InUse(); busy {
		e.Warn("in use", blockdev.InUseWarning(image, h))
	}
	b := &roBackend{e: e, root: e.Root(), warn: warn, files: map[ondisk.InodeRef]*item.InodeItem{}}
	if b.sf, err = superStatfs(image); err != nil {
		e.Close()
		return nil, err
	}
	return b, nil
}

// superStatfs reports the sizes the superblock records.
func superStatfs(image string) (statfs, error) {
	dev, err := blockdev.OpenFile(image, true)
	if err != nil {
		return statfs{}, err
	}
	defer dev.Close()
	res, err := diskio.ReadSuper(dev, -1)
	if err != nil {
		return statfs{}, err
	}
	sb := res.Super
	free := sb.TotalBytes - min(sb.TotalBytes, sb.BytesUsed)
	return statfs{Total: sb.TotalBytes, Free: free, Avail: free, BlockSize: sb.SectorSize}, nil
}

func (b *roBackend) Root() ondisk.InodeRef { return b.root }

func (b *roBackend) Getattr(id ondisk.InodeRef) (attr, error) {
	x, err := b.e.Inode(id)
	if err != nil {
		return attr{}, err
	}
	return attrOfItem(&x), nil
}

// Lookup finds name in dir; a directory is entered only through its one
// link.
func (b *roBackend) Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, attr, error) {
	e, id, err := b.e.Lookup(dir, name)
	if err != nil {
		return ondisk.InodeRef{}, attr{}, err
	}
	x, err := b.e.Inode(id)
	if err == nil {
		err = b.e.CheckLink(dir, e, id, &x)
	}
	if err != nil {
		return ondisk.InodeRef{}, attr{}, err
	}
	return id, attrOfItem(&x), nil
}

// ReadDir lists dir from DIR_INDEX from on; the type is the entry's own, as
// the kernel's readdir reports it.
func (b *roBackend) ReadDir(dir ondisk.InodeRef, from uint64, fn func(dirent) bool) error {
	listed := false
	_, err := b.e.ReadDir(dir, from, func(e inode.DirEntry, target ondisk.InodeRef, _ error) bool {
		listed = true
		return fn(dirent{Name: e.Name, Index: e.Index, Mode: modeOfFT(e.Type, e.IsSubvol()), ID: target})
	})
	if errors.Is(err, diskio.ErrCorrupt) {
		// a leaf of the directory that cannot be read: list what can be
		return partialDir(dir, listed, err, b.warn)
	}
	return err
}

// partialDir ends a listing that met damage: with entries listed it is a
// log line and the listing stands, with none it is the error.
func partialDir(dir ondisk.InodeRef, listed bool, damage error, warn func(string)) error {
	if damage == nil {
		return nil
	}
	if !listed {
		return damage
	}
	if warn != nil {
		warn(fmt.Sprintf("readdir %v: listing only what could be read: %v", dir, damage))
	}
	return nil
}

// inode returns id's inode item, read once while the kernel holds id.
func (b *roBackend) inode(id ondisk.InodeRef) (*item.InodeItem, error) {
	b.mu.Lock()
	x := b.files[id]
	b.mu.Unlock()
	if x != nil {
		return x, nil
	}
	v, err := b.e.Inode(id)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if x := b.files[id]; x != nil {
		return x, nil
	}
	b.files[id] = &v
	return &v, nil
}

// ReadAt reads id's bytes at off; n < len(p) at the end of the file.
func (b *roBackend) ReadAt(id ondisk.InodeRef, p []byte, off int64) (int, error) {
	x, err := b.inode(id)
	if err != nil {
		return 0, err
	}
	if x.Mode&item.SIFMT == item.SIFDIR {
		return 0, syscall.EISDIR
	}
	if off < 0 {
		return 0, syscall.EINVAL
	}
	size := int64(x.Size)
	if off >= size {
		return 0, nil
	}
	if int64(len(p)) > size-off {
		p = p[:size-off]
	}
	return b.e.ReadData(id, x, p, uint64(off))
}

func (b *roBackend) SeekData(id ondisk.InodeRef, off int64, data bool) (int64, error) {
	x, err := b.inode(id)
	if err != nil {
		return 0, err
	}
	return b.e.SeekData(id, x, off, data)
}

func (b *roBackend) Readlink(id ondisk.InodeRef) (string, error) {
	x, err := b.e.Inode(id)
	if err != nil {
		return "", err
	}
	if x.Mode&item.SIFMT != item.SIFLNK {
		return "", syscall.EINVAL
	}
	return b.e.Readlink(id, &x)
}

func (b *roBackend) ListXattr(id ondisk.InodeRef) ([]string, error) {
	xs, err := b.e.Xattrs(id)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.Name
	}
	slices.Sort(out)
	return out, nil
}

func (b *roBackend) GetXattr(id ondisk.InodeRef, name string) ([]byte, error) {
	v, err := b.e.GetXattr(id, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, syscall.ENODATA
	}
	return v, err
}

func (b *roBackend) Statfs() (statfs, error) { return b.sf, nil }

func (b *roBackend) Forget(id ondisk.InodeRef) {
	b.mu.Lock()
	delete(b.files, id)
	b.mu.Unlock()
}

func (b *roBackend) Close() error { return b.e.Close() }
