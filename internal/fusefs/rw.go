package fusefs

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/pagecache"
)

// rwState is a read-write mount: fsops for the trees, the page cache for
// buffered writes, and the flusher. It also serves the reads (backend).
type rwState struct {
	m     *fsys
	ops   *fsops.FS
	cache *pagecache.Cache
	root  ondisk.InodeRef

	// wbMu: shared by readers of "disk + dirty" views, exclusive for
	// writeback and for operations that change file data on disk (see doc.go).
	wbMu sync.RWMutex
	// locks serialize data changes per inode (write, truncate, fallocate,
	// clone), hashed by ID.
	locks [256]sync.Mutex
	// nsMu serializes namespace changes with the open-file bookkeeping
	// that decides whether an unlinked file needs a hidden name.
	nsMu sync.Mutex

	noCaps sync.Map // ondisk.InodeRef -> struct{}: known to have no security.capability

	atimes map[ondisk.InodeRef]time.Time // under mu: access times not yet in the inode items (atime.go)
	// ctimeFloor: under mu, the ctime an ioctl gave a regular file behind
	// the kernel's back, which a ctime from the kernel may not undo (ctimestale.go)
	ctimeFloor map[ondisk.InodeRef]time.Time

	mu   sync.Mutex
	open map[ondisk.InodeRef]*openState

	// kernelTimes: in the kernel's writeback cache mode the kernel keeps
	// mtime and ctime and sends them with SETATTR; writes do not set them.
	kernelTimes bool

	// rsv is the data space held with fsops.ReserveData for buffered
	// bytes; unplaced the part of it whose bytes are not in the cache yet
	// (datarsv.go).
	rsv, unplaced atomic.Int64
	// meta is the metadata held with fsops.HoldMeta for the ranges to
	// write back; unplacedSpans counts writes not in the cache yet
	// (metarsv.go).
	meta, unplacedSpans atomic.Int64
	// invalidating: ondisk.InodeRef -> *atomic.Bool (go round again), inodes whose kernel page
	// cache is being dropped after a refused WRITE (wbfail.go)
	invalidating sync.Map
	// nocow: under mu, bytes of writes to id taken with no reservation
	// because they go in place (datarsv.go)
	nocow map[ondisk.InodeRef]int64

	writes     atomic.Uint64 // WRITE requests received (syncWithKernel waits for them to stop)
	limit      int64
	interval   time.Duration
	kick       chan struct{}
	stop, done chan struct{}
	closed     bool
}

// openState is kept for each regular file that is open.
type openState struct {
	opens int
	isDir bool
	// orphan: it lost its last name while open (or is an O_TMPFILE): an
	// orphan of the engine until its last release (orphan.go).
	orphan bool
	// mtime is the file's modification time while it has buffered data:
	// the time of the last write, or a time set explicitly since; written
	// back with the data (writeback itself is not a modification).
	mtime time.Time
	// lastWrite is the time of the last buffered write (for ctime).
	lastWrite time.Time
	// staleCtime: an ioctl changed the ctime the kernel keeps for itself
	// (ctimestale.go); the kernel drops its inode at the last release.
	staleCtime bool
	// lostWrite: a WRITE of the kernel's cached pages was refused (the
	// writeback cache took write(2) before the daemon saw it; ENOSPC at
	// writeback): the kernel's i_size and pages show bytes the image does
	// not hold, so the kernel drops its inode at the last release (wbfail.go).
	lostWrite bool
	// selfTimes: a write through an open that bypasses the kernel's cache
	// in the writeback cache mode (wbfail.go): the kernel stamped no time,
	// so the daemon keeps the write's times in mtime and lastWrite, writes
	// them back at the last release and has the kernel drop its inode.
	selfTimes bool
}

// openRW opens image for writing and picks the subvolume to serve.
func openRW(image string, o *Options, m *fsys) (*rwState, error) {
	if o.NoLogReplay {
		return nil, fmt.Errorf("option nologreplay needs ro (a read-write mount replays the log tree)")
	}
	alg := compress.None
	if o.Compress != "" && o.Compress != "no" && o.Compress != "none" {
		name, _, _ := strings.Cut(o.Compress, ":")
		a, err := compress.ParseAlg(name)
		if err != nil {
			return nil, fmt.Errorf("compress=%s: %w", o.Compress, err)
		}
		alg = a
	}
	ops, err := fsops.OpenImage(image, fsops.Options{Compress: alg, Now: now, Warn: func(s string) { m.logf("%s", s) }})
	if err != nil {
		return nil, err
	}
	r := &rwState{m: m, ops: ops, open: map[ondisk.InodeRef]*openState{}, atimes: map[ondisk.InodeRef]time.Time{}, ctimeFloor: map[ondisk.InodeRef]time.Time{}, nocow: map[ondisk.InodeRef]int64{},
		limit: o.DirtyLimit, interval: o.CommitInterval, kernelTimes: o.writebackCache(),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if r.limit <= 0 {
		r.limit = defaultDirtyLimit
	}
	if r.interval <= 0 {
		r.interval = defaultCommitInterval
	}
	r.cache = pagecache.New(wbBackend{r}, 0) // limits are enforced here, see throttle
	sub, err := r.pickSubvol(o)
	if err != nil {
		ops.Close()
		return nil, err
	}
	r.root = ondisk.InodeRef{Root: sub, Ino: fsops.RootDirIno}
	if _, err := ops.Stat(r.root); err != nil {
		ops.Close()
		return nil, fmt.Errorf("subvolume %d: %w", sub, err)
	}
	ops.SetInUse(r.inUse)
	if err := r.cleanOrphans(sub); err != nil {
		ops.Close()
		return nil, err
	}
	return r, nil
}

// pickSubvol resolves subvol= / subvolid= or the default subvolume.
func (r *rwState) pickSubvol(o *Options) (ondisk.ObjectID, error) {
	switch {
	case o.SubvolID != 0:
		return ondisk.ObjectID(o.SubvolID), nil
	case o.Subvol != "":
		want := strings.Trim(path.Clean("/"+o.Subvol), "/")
		if want == "" {
			return ondisk.FSTreeObjectID, nil
		}
		subs, err := r.ops.ListSubvolumes()
		if err != nil {
			return 0, err
		}
		for _, s := range subs {
			if s.Path == want {
				return s.ID, nil
			}
		}
		return 0, fmt.Errorf("subvol=%s: %w", o.Subvol, fs.ErrNotExist)
	}
	id, err := r.ops.DefaultSubvolume()
	if err != nil {
		return 0, fmt.Errorf("default subvolume: %w", err)
	}
	return id, nil
}

// lock returns id's data lock.
func (r *rwState) lock(id ondisk.InodeRef) *sync.Mutex { return &r.locks[lockIndex(id)] }

func lockIndex(id ondisk.InodeRef) int { return int((id.Ino*0x9E3779B97F4A7C15 ^ id.Root) >> 56) }

func attrOfItem(x *item.InodeItem) attr {
	return attr{Mode: x.Mode, Nlink: x.NLink, UID: x.UID, GID: x.GID, Rdev: x.Rdev, Size: x.Size,
		NBytes: x.NBytes, Atime: x.Atime.Time(), Mtime: x.Mtime.Time(), Ctime: x.Ctime.Time(),
		Btime: x.Otime.Time(), Gen: x.Generation, Flags: x.Flags}
}

// overlay adds what is buffered to on-disk attributes: the size grows to
// the end of dirty data, the times to the last buffered write.
func (r *rwState) overlay(id ondisk.InodeRef, a *attr) {
	if a.Mode&syscall.S_IFMT == syscall.S_IFREG {
		if end := uint64(r.cache.DirtyEnd(id)); end > a.Size {
			// the blocks buffered data takes past the on-disk size, not
			// the hole up to it (a sparse file stays sparse)
			a.NBytes += uint64(r.cache.DirtyBlocksFrom(id, int64(a.Size+4095)&^4095, 4096))
			a.Size = end
		}
	}
	r.mu.Lock()
	if t, ok := r.atimes[id]; ok && t.After(a.Atime) {
		a.Atime = t
	}
	if st := r.open[id]; st != nil {
		if !st.mtime.IsZero() {
			a.Mtime = st.mtime
		}
		if st.lastWrite.After(a.Ctime) {
			a.Ctime = st.lastWrite
		}
	}
	r.mu.Unlock()
}

func (r *rwState) getattr(id ondisk.InodeRef) (attr, error) {
	if r.cache.Clean(id) {
		// nothing buffered before the lookup nor after it: no writeback
		// moved a size or bytes under it (as rwState.read), so it need not
		// wait for a writeback of another inode to let go of wbMu
		x, err := r.ops.Stat(id)
		if err == nil && r.cache.Clean(id) {
			a := attrOfItem(&x)
			r.overlay(id, &a)
			return a, nil
		}
	}
	r.wbMu.RLock()
	defer r.wbMu.RUnlock()
	x, err := r.ops.Stat(id)
	if err != nil {
		return attr{}, err
	}
	a := attrOfItem(&x)
	r.overlay(id, &a)
	return a, nil
}

// statfs reports the device size and the space data can still use: free
// space in data block groups plus unallocated device space, less what is
// buffered and not yet allocated.
func (r *rwState) statfs() (statfs, error) {
	total, free, bs := r.ops.Space()
	dirty := uint64(max(r.cache.Pending(), 0)) // not allocated yet
	free -= min(free, dirty)
	return statfs{Total: total, Free: free, Avail: free, BlockSize: bs}, nil
}

func (r *rwState) dataFree() uint64 {
	_, free, _ := r.ops.Space()
	return free
}
