package fusefs

import (
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// The ctime an ioctl sets, in the writeback cache mode.
//
// With the writeback cache the kernel keeps a regular file's mtime and
// ctime itself (fuse_get_cache_mask: STATX_MTIME|STATX_CTIME|STATX_SIZE)
// and takes neither from the daemon's attributes while it holds the inode;
// it sends its own back with SETATTR (fuse_flush_times, FATTR_CTIME). An
// FS_IOC_SETFLAGS (chattr) reaches the daemon through fuse_fileattr_set,
// which updates no time in the kernel's inode, so the ctime the daemon
// gives the inode would neither show (stat after chattr: generic/277)
// nor last (the next flush of the kernel's times sets the old one back).
//
// Two rules make it right:
//   - a ctime from the kernel never moves the one an ioctl stored
//     backwards (keepCtime): users cannot set ctime, only the kernel's
//     time flush sends one, so its older ctime is the stale one;
//   - once the last open of such a file is released, the daemon asks the
//     kernel to drop its inode (FUSE_NOTIFY_PRUNE: unused dentries of the
//     inode go, and FUSE inodes are deleted at their last iput), so the
//     next lookup builds the inode from the daemon's attributes. An open
//     file keeps its kernel inode, so the prune waits for the last
//     RELEASE (the ioctl itself comes on an open file).

// kernelCtimeStale records that the daemon changed regular file id's ctime
// behind the kernel (an ioctl) while the kernel owns its times.
func (r *rwState) kernelCtimeStale(id ondisk.InodeRef) {
	if !r.kernelTimes {
		return
	}
	x, err := r.ops.Stat(id)
	if err != nil || x.Mode&0o170000 != 0o100000 {
		return
	}
	r.mu.Lock()
	if st := r.open[id]; st != nil {
		st.staleCtime = true
	}
	r.ctimeFloor[id] = x.Ctime.Time()
	r.mu.Unlock()
}

// keepCtime makes a's ctime from the kernel no older than the one an
// ioctl gave id. Only there: other changes the daemon makes (link,
// rename) the kernel stamps itself, and its time is the one shown. Once
// the kernel sends a ctime at least as new, its inode has caught up and
// the floor goes.
func (r *rwState) keepCtime(id ondisk.InodeRef, a *fsops.SetAttr) {
	if !r.kernelTimes || a.Valid&fsops.SetCtime == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	floor, ok := r.ctimeFloor[id]
	switch {
	case !ok:
	case floor.After(a.Ctime):
		a.Ctime = floor
	default:
		delete(r.ctimeFloor, id)
	}
}

// pruneWait bounds how long a RELEASE waits for the kernel to take the
// prune notification (it never needs to: nothing the notification locks
// waits for a RELEASE, but a stuck kernel must not hold the release).
const pruneWait = 200 * time.Millisecond

// dropKernelInode asks the kernel to forget id's inode and dentries. It is
// sent before the RELEASE that made the file unused is answered: the
// kernel holds the inode until that answer, then evicts it, so a lookup
// after the close sees the new attributes as soon as possible.
func (m *fsys) dropKernelInode(id ondisk.InodeRef) {
	srv := m.server.Load()
	if srv == nil {
		return
	}
	node := m.nodeID(id)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// ENOSYS before kernel 6.18 (FUSE 7.45); then the stored ctime
		// shows once the kernel drops the inode by itself
		srv.PruneNotify([]uint64{node})
	}()
	select {
	case <-done:
	case <-time.After(pruneWait):
	}
	if _, busy := m.dropping.LoadOrStore(id, struct{}{}); !busy {
		go m.pruneAgain(id, node)
	}
}

// pruneAgain repeats the prune notification of id (node) until the
// kernel forgets it (OnForget), a few times: the kernel evicts only an
// inode nobody uses, and a stat or lookup running when the notification
// came (the close that led to it has returned before its RELEASE) held
// it; the inode then stayed with the times and size the kernel keeps
// (TestNearFullWriteTimes failed about one run in eight).
func (m *fsys) pruneAgain(id ondisk.InodeRef, node uint64) {
	defer m.dropping.Delete(id)
	for _, d := range pruneRetries {
		time.Sleep(d)
		if _, ok := m.dropping.Load(id); !ok {
			return
		}
		if m.rw != nil && m.rw.isOpen(id) {
			return // in use again: its last release asks again
		}
		srv := m.server.Load()
		if srv == nil || srv.PruneNotify([]uint64{node}) != fuse.OK {
			return
		}
	}
}

// isOpen reports whether id is open (rw.open has it with opens left).
func (r *rwState) isOpen(id ondisk.InodeRef) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.open[id]
	return st != nil && st.opens > 0
}

// pruneRetries are the waits between the prune notifications of one inode.
var pruneRetries = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond, time.Second}
