package fusefs

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// SEEK_DATA / SEEK_HOLE with the writeback cache. The kernel's FUSE sends
// LSEEK without writing its dirty pages back first (fuse_lseek), so data
// a process wrote and has not closed or fsynced yet would be a hole to
// the daemon, and its size the daemon's older one: `pwrite 1 byte at 4K;
// SEEK_DATA 0` would say ENXIO instead of 4096, and a copy that trusts
// SEEK_HOLE (cp --sparse) would skip written data. kernelWriteback makes
// the kernel hand its dirty pages over first: FUSE_NOTIFY_INVAL_INODE for
// the whole file invalidates its page cache, and invalidation writes each
// dirty page back (launder_folio) and waits for it, before the notify
// returns. The answer is then over everything written. It costs the
// file's clean cached pages, on the rare seek for data or holes.
//
// It is sent from the LSEEK handler, before the daemon takes any lock:
// the caller holds the inode's lock in the kernel (fuse_file_llseek), which
// neither the invalidation nor the WRITE requests it sends need, and
// those are served by the other request goroutines.
func (m *fsys) kernelWriteback(id ondisk.InodeRef) {
	if m.rw == nil || !m.rw.kernelTimes {
		return
	}
	if srv := m.server.Load(); srv != nil {
		srv.InodeNotify(m.nodeID(id), 0, 0)
	}
}
