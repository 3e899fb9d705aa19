package fusefs

import (
	"errors"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Access times. FUSE inodes are S_NOATIME in the kernel: it never updates
// an atime itself, so the daemon does, on READ and READDIR, by the rules
// of the mount (-o relatime, the default; noatime; strictatime;
// nodiratime) as the kernel's atime_needs_update and relatime_need_update
// apply them. An update is kept in memory and written into the inode item
// (the atime alone: not ctime, not mtime) just before the next commit,
// never a commit of its own (accessed). Read-only mounts, read-only
// subvolumes and inodes with the NOATIME flag (chattr +A) keep their atime.
//
// A read the kernel serves from its page cache never reaches the daemon.
// So that the first read after a change still does, an open for reading
// of a file whose atime a read would update drops the kernel's cached
// pages (no FOPEN_KEEP_CACHE). Under strictatime, repeated reads through
// one open file served from the page cache do not move the atime.

// relatimeWindow: relatime still updates an atime older than a day.
const relatimeWindow = 24 * time.Hour

// atimeDue says whether a read at now changes the atime of an inode with
// attributes a.
func (m *fsys) atimeDue(a *attr, now time.Time) bool {
	mode, nodir := m.atimeRule()
	if m.rw == nil || m.frozen.Load() || mode == AtimeNever || a.Flags&item.InodeNoAtime != 0 {
		return false
	}
	if a.Mode&syscall.S_IFMT == syscall.S_IFDIR && nodir {
		return false
	}
	if a.Atime.Equal(now) {
		return false
	}
	if mode == AtimeStrict {
		return true
	}
	return !a.Mtime.Before(a.Atime) || !a.Ctime.Before(a.Atime) || now.Sub(a.Atime) >= relatimeWindow
}

// accessed notes a new atime for id after a read, if the mount's rules
// want one. The atime waits in memory (rwState.atimes, shown by getattr)
// until the next writeback of everything (flushAll: the periodic commit,
// sync, fsync of the inode, remount,ro, unmount) writes it into the inode
// item: one inode update per inode and commit, however many reads.
func (m *fsys) accessed(id ondisk.InodeRef) { m.accessedAttr(id, nil) }

// accessedAttr is accessed with id's attributes as getattr shows them
// (a READ has them from the inode item it read); nil looks them up.
func (m *fsys) accessedAttr(id ondisk.InodeRef, a *attr) {
	mode, _ := m.atimeRule()
	if m.rw == nil || mode == AtimeNever {
		return
	}
	r := m.rw
	if a == nil {
		v, err := r.getattr(id)
		if err != nil {
			return
		}
		a = &v
	}
	// time.Now (vDSO) is never behind the coarse clock (a system call
	// here): when the atime is not due by it, it is not due by the coarse
	// clock either (relatime), and most reads stop here
	if mode != AtimeStrict && !m.atimeDue(a, time.Now()) {
		return
	}
	now := now()
	if !m.atimeDue(a, now) {
		return
	}
	r.mu.Lock()
	r.atimes[id] = now
	r.mu.Unlock()
}

// flushAtimes writes the pending atimes (all, or id's only) into the
// inode items: the atime alone, ctime kept. A read-only subvolume or a
// deleted inode keeps none.
func (r *rwState) flushAtimes(only *ondisk.InodeRef) {
	r.mu.Lock()
	var todo map[ondisk.InodeRef]time.Time
	if only != nil {
		if t, ok := r.atimes[*only]; ok {
			todo = map[ondisk.InodeRef]time.Time{*only: t}
			delete(r.atimes, *only)
		}
	} else if len(r.atimes) > 0 {
		todo, r.atimes = r.atimes, map[ondisk.InodeRef]time.Time{}
	}
	r.mu.Unlock()
	for id, t := range todo {
		l := r.lock(id)
		l.Lock()
		x, err := r.ops.Stat(id)
		if err == nil && x.Atime.Time().Before(t) {
			_, err = r.ops.Setattr(id, fsops.SetAttr{Valid: fsops.SetAtime | fsops.SetCtime,
				Atime: t, Ctime: x.Ctime.Time()})
		}
		l.Unlock()
		if err != nil && !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.ENOENT) {
			r.m.logf("atime of %v: %v", id, err)
		}
	}
}

// dropAtime forgets a pending atime (an explicit one was set).
func (r *rwState) dropAtime(id ondisk.InodeRef) {
	r.mu.Lock()
	delete(r.atimes, id)
	r.mu.Unlock()
}

// keepCache says whether an open of id may keep the kernel's cached pages:
// not when the next read must reach the daemon to update the atime.
func (m *fsys) keepCache(id ondisk.InodeRef, flags uint32) bool {
	if mode, _ := m.atimeRule(); m.rw == nil || mode == AtimeNever ||
		flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		return true
	}
	a, err := m.rw.getattr(id)
	return err != nil || !m.atimeDue(&a, now())
}

// atimeRule is the mount's atime rule now (remount can change it).
func (m *fsys) atimeRule() (AtimeMode, bool) {
	v := m.atime.Load()
	return AtimeMode(v & 0xff), v&0x100 != 0
}

func (m *fsys) setAtimeRule(mode AtimeMode, nodiratime bool) {
	v := uint32(mode) & 0xff
	if nodiratime {
		v |= 0x100
	}
	m.atime.Store(v)
}
