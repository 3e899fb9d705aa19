package fusefs

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"syscall"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// roBackend serves a read-only mount from the read side (package gobtrfs).
// That API is addressed by path, so the backend remembers one path per
// inode it has handed out (a read-only tree never moves); a node-level API
// in the root package would make this map unnecessary.
type roBackend struct {
	fs   *gobtrfs.FS
	root ondisk.InodeRef
	sf   statfs
	warn func(string)

	mu    sync.Mutex
	paths map[ondisk.InodeRef]string
	files map[ondisk.InodeRef]*gobtrfs.File // open regular files, for ReadAt and SEEK_DATA
}

// openRO opens image read-only through the read side.
func openRO(image string, o *Options, warn func(string)) (*roBackend, error) {
	opts := &gobtrfs.Options{Subvol: o.Subvol, SubvolID: o.SubvolID, Warn: warn, ReadOnly: true, NoVerifyDataCsum: o.NoDataCsum, NoLogReplay: o.NoLogReplay}
	f, err := gobtrfs.Open(image, opts)
	if err != nil {
		return nil, err
	}
	b := &roBackend{fs: f, warn: warn, paths: map[ondisk.InodeRef]string{}, files: map[ondisk.InodeRef]*gobtrfs.File{}}
	st, err := f.Lstat(".")
	if err != nil {
		f.Close()
		return nil, err
	}
	s := st.Sys().(*gobtrfs.Stat)
	b.root = ondisk.InodeRef{Root: ondisk.ObjectID(s.Subvol), Ino: ondisk.ObjectID(s.Ino)}
	b.paths[b.root] = "."
	if b.sf, err = superStatfs(image); err != nil {
		f.Close()
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

func (b *roBackend) path(id ondisk.InodeRef) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.paths[id]
	if !ok {
		return "", fmt.Errorf("%v: no known path: %w", id, syscall.ESTALE)
	}
	return p, nil
}

func (b *roBackend) remember(id ondisk.InodeRef, p string) {
	b.mu.Lock()
	if _, ok := b.paths[id]; !ok {
		b.paths[id] = p
	}
	b.mu.Unlock()
}

func attrOfStat(s *gobtrfs.Stat) attr {
	return attr{Mode: s.Mode, Nlink: s.Nlink, UID: s.UID, GID: s.GID, Rdev: ondisk.DecodeDevT(s.Rdev),
		Size: uint64(s.Size), NBytes: s.NBytes, Atime: s.Atime, Mtime: s.Mtime, Ctime: s.Ctime,
		Gen: s.Generation, Flags: s.Flags}
}

func (b *roBackend) lstat(p string) (ondisk.InodeRef, attr, error) {
	fi, err := b.fs.Lstat(p)
	if err != nil {
		return ondisk.InodeRef{}, attr{}, err
	}
	s := fi.Sys().(*gobtrfs.Stat)
	return ondisk.InodeRef{Root: ondisk.ObjectID(s.Subvol), Ino: ondisk.ObjectID(s.Ino)}, attrOfStat(s), nil
}

func (b *roBackend) Getattr(id ondisk.InodeRef) (attr, error) {
	p, err := b.path(id)
	if err != nil {
		return attr{}, err
	}
	_, a, err := b.lstat(p)
	return a, err
}

func (b *roBackend) Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, attr, error) {
	dp, err := b.path(dir)
	if err != nil {
		return ondisk.InodeRef{}, attr{}, err
	}
	p := path.Join(dp, name)
	if !fs.ValidPath(p) {
		// the read side takes io/fs paths: valid UTF-8 only
		return ondisk.InodeRef{}, attr{}, fmt.Errorf("lookup %q: name is not valid UTF-8: %w", name, syscall.ENOENT)
	}
	id, a, err := b.lstat(p)
	if err == nil {
		b.remember(id, p)
	}
	return id, a, err
}

func (b *roBackend) ReadDir(dir ondisk.InodeRef, from uint64, fn func(dirent) bool) error {
	dp, err := b.path(dir)
	if err != nil {
		return err
	}
	f, err := b.fs.OpenFile(dp)
	if err != nil {
		return err
	}
	defer f.Close()
	// The read side lists in DIR_INDEX order without the index; positions
	// (from 2, like DIR_INDEX) are as stable as the indexes in a tree that
	// never changes.
	idx := uint64(2)
	var damage error // a block of the directory that could not be read
	for {
		es, err := f.ReadDir(1024)
		for _, e := range es {
			if idx >= from {
				d := dirent{Name: e.Name(), Index: idx, Mode: modeOfType(e.Type())}
				if fi, err := e.Info(); err == nil {
					s := fi.Sys().(*gobtrfs.Stat)
					d.ID = ondisk.InodeRef{Root: ondisk.ObjectID(s.Subvol), Ino: ondisk.ObjectID(s.Ino)}
					d.Mode = s.Mode &^ 0o7777
				}
				if !fn(d) {
					return nil
				}
			}
			idx++
		}
		if errors.Is(err, diskio.ErrCorrupt) {
			// the read side lists past blocks it cannot read
			damage = cmp.Or(damage, err)
			if len(es) > 0 {
				continue
			}
			err = io.EOF
		}
		if errors.Is(err, io.EOF) || err == nil && len(es) == 0 {
			return partialDir(dir, idx > 2, damage, b.warn)
		}
		if err != nil {
			return err
		}
	}
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

func modeOfType(t fs.FileMode) uint32 {
	switch {
	case t&fs.ModeDir != 0:
		return syscall.S_IFDIR
	case t&fs.ModeSymlink != 0:
		return syscall.S_IFLNK
	case t&fs.ModeNamedPipe != 0:
		return syscall.S_IFIFO
	case t&fs.ModeSocket != 0:
		return syscall.S_IFSOCK
	case t&fs.ModeCharDevice != 0:
		return syscall.S_IFCHR
	case t&fs.ModeDevice != 0:
		return syscall.S_IFBLK
	}
	return syscall.S_IFREG
}

// file returns the open read-side file of id.
func (b *roBackend) file(id ondisk.InodeRef) (*gobtrfs.File, error) {
	b.mu.Lock()
	f := b.files[id]
	p, ok := b.paths[id]
	b.mu.Unlock()
	if f != nil {
		return f, nil
	}
	if !ok {
		return nil, fmt.Errorf("%v: no known path: %w", id, syscall.ESTALE)
	}
	f, err := b.fs.OpenFile(p)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if g := b.files[id]; g != nil {
		f.Close()
		return g, nil
	}
	b.files[id] = f
	return f, nil
}

func (b *roBackend) ReadAt(id ondisk.InodeRef, p []byte, off int64) (int, error) {
	f, err := b.file(id)
	if err != nil {
		return 0, err
	}
	n, err := f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (b *roBackend) SeekData(id ondisk.InodeRef, off int64, data bool) (int64, error) {
	f, err := b.file(id)
	if err != nil {
		return 0, err
	}
	if data {
		return f.SeekData(off)
	}
	return f.SeekHole(off)
}

func (b *roBackend) Readlink(id ondisk.InodeRef) (string, error) {
	p, err := b.path(id)
	if err != nil {
		return "", err
	}
	return b.fs.ReadLink(p)
}

func (b *roBackend) ListXattr(id ondisk.InodeRef) ([]string, error) {
	p, err := b.path(id)
	if err != nil {
		return nil, err
	}
	return b.fs.ListXattr(p)
}

func (b *roBackend) GetXattr(id ondisk.InodeRef, name string) ([]byte, error) {
	p, err := b.path(id)
	if err != nil {
		return nil, err
	}
	v, err := b.fs.GetXattr(p, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, syscall.ENODATA
	}
	return v, err
}

func (b *roBackend) Statfs() (statfs, error) { return b.sf, nil }

func (b *roBackend) Forget(id ondisk.InodeRef) {
	b.mu.Lock()
	f := b.files[id]
	delete(b.files, id)
	if id != b.root {
		delete(b.paths, id)
	}
	b.mu.Unlock()
	if f != nil {
		f.Close()
	}
}

func (b *roBackend) Close() error { return b.fs.Close() }
