package fsops

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
)

// logWriter returns the filesystem's log tree writer.
func (f *FS) logWriter() *treelog.Writer {
	f.logOnce.Do(func() { f.log = treelog.NewWriter(f.tx) })
	return f.log
}

// Fsync makes inode id durable. A regular file whose names are those of the
// last commit is written to the log tree (no commit); anything else commits
// (treelog.Writer says which reason, see FsyncStats). The inode's buffered
// data must have been written back first. fdatasync is the same call.
// mirrors btrfs_sync_file
func (f *FS) Fsync(id ondisk.InodeRef) error {
	if x, err := f.Stat(id); err == nil && x.NLink == 0 {
		// An orphan (open, no name left, orphan.go): no name reaches it
		// after a crash, so there is nothing to make durable.
		// mirrors btrfs_log_inode_parent's BTRFS_NO_LOG_SYNC for i_nlink 0
		return nil
	}
	f.mu.Lock()
	f.logging++ // the log copies file extent items: no tail may grow (tail.go)
	f.forgetTails()
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.logging--
		f.mu.Unlock()
	}()
	return f.logWriter().Fsync(id, f.Commit)
}

// FsyncStats reports how fsyncs were made durable: by the log, or by a
// commit per reason.
func (f *FS) FsyncStats() treelog.StatsSnapshot { return f.logWriter().Stats() }
