package fusefs

import (
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Set-user-ID, set-group-ID and file capabilities on write, truncate and
// chown (FUSE_HANDLE_KILLPRIV_V2).
//
// Without it the kernel asks the daemon for security.capability before
// every write(2) (file_remove_privs), one round trip more per write, also
// in writeback_cache mode where the write itself never reaches us. With
// it the kernel marks the superblock SB_NOSEC: an inode found once with
// neither set-ID bits nor capabilities skips that check from then on
// (setting a security.* xattr clears the mark again), and the daemon
// drops the set-ID bits where the kernel says the caller may not keep
// them: FUSE_WRITE_KILL_SUIDGID on a write, FATTR_KILL_SUIDGID on a
// truncate or chown, FUSE_OPEN_KILL_SUIDGID on an O_TRUNC open or create.
// S_ISUID always goes; S_ISGID only with group execute (otherwise it marks
// mandatory locking, and stays). Capabilities are still removed by the
// VFS (cap_inode_killpriv, a REMOVEXATTR) whenever it finds them.
// mirrors should_remove_suid / setattr_should_drop_suidgid

const (
	modeSetuid = 0o4000
	modeSetgid = 0o2000
	modeGroupX = 0o0010
)

// killedMode is mode without the set-ID bits a write by an unprivileged
// caller drops.
func killedMode(mode uint32) uint32 {
	m := mode &^ modeSetuid
	if mode&(modeSetgid|modeGroupX) == modeSetgid|modeGroupX {
		m &^= modeSetgid
	}
	return m
}

// killSuidgid drops the set-ID bits of regular file id as killedMode says.
func (r *rwState) killSuidgid(id ondisk.InodeRef) error {
	x, err := r.ops.Stat(id)
	if err != nil || x.Mode&0o170000 != 0o100000 {
		return nil // the request itself reports a missing inode
	}
	m := killedMode(x.Mode)
	if m == x.Mode {
		return nil
	}
	return r.setattr(id, fsops.SetAttr{Valid: fsops.SetMode, Mode: m & 0o7777}, false)
}

// killFor runs killSuidgid for the inode of a request's node ID.
func (m *fsys) killFor(nodeID uint64) fuse.Status {
	if m.rw == nil || nodeID == fuse.FUSE_ROOT_ID {
		return fuse.OK
	}
	id, ok := m.ids.lookup(nodeID)
	if !ok {
		return fuse.OK
	}
	if err := m.rw.killSuidgid(id); err != nil {
		return fuse.Status(m.errnoOf("drop set-ID bits of", id, err))
	}
	return fuse.OK
}
