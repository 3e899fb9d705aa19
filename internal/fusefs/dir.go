package fusefs

import (
	"context"
	"sort"
	"sync"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

var (
	_ = (fs.NodeOpendirHandler)((*Node)(nil))
	_ = (fs.FileReaddirenter)((*dirHandle)(nil))
	_ = (fs.FileSeekdirer)((*dirHandle)(nil))
	_ = (fs.FileFsyncdirer)((*dirHandle)(nil))
	_ = (fs.FileReleasedirer)((*dirHandle)(nil))
)

// dirHandle is an open directory. Its entries are read at the first
// readdir after opendir or rewinddir and served from that snapshot (POSIX
// leaves entries added or removed later unspecified). Offsets are stable:
// an entry's d_off is its DIR_INDEX + 1, so telldir/seekdir positions stay
// valid, even across handles, however large the directory.
type dirHandle struct {
	n *Node

	mu      sync.Mutex
	entries []dirent // nil until loaded
	loaded  bool
	next    uint64 // offset of the next entry: 0 ".", 1 "..", >= 2 entries with Index >= next
}

// OpendirHandle opens directory n.
func (n *Node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.m.rw != nil {
		if err := n.m.rw.openExisting(n.id); err != nil {
			return nil, 0, n.m.errnoOf("opendir", n.id, err)
		}
	}
	return &dirHandle{n: n}, 0, 0
}

func (d *dirHandle) load() syscall.Errno {
	var es []dirent
	m := d.n.m
	err := m.b.ReadDir(d.n.id, 0, func(e dirent) bool {
		if err := inode.ValidName(e.Name); err != nil {
			// the backends skip these already; the kernel must never see
			// one ('/' or NUL, or a "." or ".." besides its own)
			m.logf("readdir %v: skipping entry %q (index %d): %v", d.n.id, e.Name, e.Index, err)
			return true
		}
		if m.rw == nil || !m.rw.hidden(d.n.id, e.Name) {
			es = append(es, e)
		}
		return true
	})
	if err != nil {
		return m.errnoOf("readdir", d.n.id, err)
	}
	d.entries, d.loaded = es, true
	m.accessed(d.n.id)
	return 0
}

// Readdirent returns the next entry, or nil at the end.
func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.n.m
	switch d.next {
	case 0:
		d.next = 1
		return &fuse.DirEntry{Name: ".", Mode: syscall.S_IFDIR, Ino: m.ids.stable(d.n.id), Off: 1}, 0
	case 1:
		d.next = 2
		ino := m.ids.stable(d.n.id)
		if _, p := d.n.Parent(); p != nil {
			ino = p.StableAttr().Ino
		}
		return &fuse.DirEntry{Name: "..", Mode: syscall.S_IFDIR, Ino: ino, Off: 2}, 0
	}
	if !d.loaded {
		if errno := d.load(); errno != 0 {
			return nil, errno
		}
	}
	i := sort.Search(len(d.entries), func(i int) bool { return d.entries[i].Index >= d.next })
	if i == len(d.entries) {
		return nil, 0
	}
	e := &d.entries[i]
	d.next = e.Index + 1
	return &fuse.DirEntry{Name: e.Name, Mode: e.Mode, Ino: m.ids.stable(e.ID), Off: e.Index + 1}, 0
}

// Seekdir moves to off, a d_off handed out before (0: rewinddir, which
// also rereads the directory).
func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off == 0 {
		d.entries, d.loaded = nil, false
	}
	d.next = off
	return 0
}

// Fsyncdir makes the directory durable: buffered data is written back
// (so that new files logged with the directory carry theirs), then the
// directory goes to the log tree with its entries (no commit), or a full
// commit where fsops cannot log it.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if d.n.m.rw == nil {
		return 0
	}
	return d.n.m.errnoOf("fsyncdir", d.n.id, d.n.m.rw.fsyncDir(d.n.id))
}

// Releasedir drops the snapshot.
func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	d.mu.Lock()
	d.entries, d.loaded = nil, false
	d.mu.Unlock()
	if d.n.m.rw != nil {
		if err := d.n.m.rw.released(d.n.id); err != nil {
			d.n.m.logf("releasedir %v: %v", d.n.id, err)
		}
	}
}
