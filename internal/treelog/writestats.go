package treelog

import (
	"maps"
	"sync"
)

// Reasons an fsync falls back to a full commit (Stats.Commits keys), and
// the cases that need neither.
const (
	ReasonNewSubvol     = "new-subvolume"        // the subvolume is not in the last commit
	ReasonInodeReused   = "inode-reused"         // a new inode has a number the last commit gives another inode
	ReasonIndexReused   = "index-reused"         // a new name has a DIR_INDEX the last commit gives another name
	ReasonNameConflict  = "name-conflict"        // a logged name is another inode's in the last commit, and that inode still exists
	ReasonSubvolEntry   = "subvolume-entry"      // a logged directory holds a subvolume (replay cannot link subvolumes)
	ReasonDirRemoved    = "dir-removed"          // a directory the log would remove a name from, or log a name into, is gone
	ReasonDeleted       = "deleted"              // the inode is gone from the running tree
	ReasonLoggedChanged = "logged-inode-changed" // an inode logged earlier in this transaction was renamed/unlinked since
	ReasonNewChunk      = "new-chunk"            // a chunk of the running transaction (unknown to the committed chunk tree)
	ReasonLogFull       = "log-full"             // the log already holds maxTargets fsync'd inodes: a commit empties it
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
	// Blocks written and blocks of the log on disk used again, over all
	// logged fsyncs; LastWritten/LastBlocks for the last one.
	Written, Reused         uint64
	LastWritten, LastBlocks int
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
	Logged                  uint64
	Commits                 map[string]uint64
	Written, Reused         uint64
	LastWritten, LastBlocks int
}

// Stats returns a copy of the counters.
func (w *Writer) Stats() StatsSnapshot {
	w.stats.mu.Lock()
	defer w.stats.mu.Unlock()
	s := &w.stats
	return StatsSnapshot{Logged: s.Logged, Commits: maps.Clone(s.Commits), Written: s.Written, Reused: s.Reused,
		LastWritten: s.LastWritten, LastBlocks: s.LastBlocks}
}
