package treelog

import (
	"maps"
	"sync"
)

// Reasons an fsync falls back to a full commit (Stats.Commits keys), and
// the cases that need neither.
const (
	ReasonDir           = "directory"            // directory fsync: dir items are not logged yet
	ReasonNotRegular    = "not-regular"          // symlink, device, fifo...
	ReasonNewInode      = "new-inode"            // created in the running transaction: its name is not logged
	ReasonNewSubvol     = "new-subvolume"        // the subvolume is not in the last commit
	ReasonNames         = "names-changed"        // link, unlink or rename since the last commit
	ReasonDeleted       = "deleted"              // the inode is gone from the running tree
	ReasonLoggedChanged = "logged-inode-changed" // an inode logged earlier in this transaction was renamed/unlinked since
	ReasonNewChunk      = "new-chunk"            // a chunk of the running transaction (unknown to the committed chunk tree)
	ReasonLogSpace      = "log-space"            // no metadata space for the log blocks
	ReasonLogIO         = "log-io"               // writing the log failed
	ReasonError         = "error"                // reading the trees failed
	ReasonClean         = "clean"                // nothing changed since the last commit: no commit, no log
	ReasonCommitted     = "committed"            // a commit made it durable while the log was being written
)

// Stats counts what fsyncs did.
type Stats struct {
	mu      sync.Mutex
	Logged  uint64            // fsyncs made durable by a log tree
	Commits map[string]uint64 // by reason (including the no-commit "clean" and "committed")
}

// count records a fallback or no-op reason.
func (w *Writer) count(reason string) {
	w.stats.mu.Lock()
	defer w.stats.mu.Unlock()
	if w.stats.Commits == nil {
		w.stats.Commits = map[string]uint64{}
	}
	w.stats.Commits[reason]++
}

// StatsSnapshot is a copy of the counters.
type StatsSnapshot struct {
	Logged  uint64
	Commits map[string]uint64
}

// Stats returns a copy of the counters.
func (w *Writer) Stats() StatsSnapshot {
	w.stats.mu.Lock()
	defer w.stats.mu.Unlock()
	return StatsSnapshot{Logged: w.stats.Logged, Commits: maps.Clone(w.stats.Commits)}
}
