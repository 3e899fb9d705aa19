package gobtrfs

// Fsync makes name (and what it points to) durable. A regular file whose
// names are those of the last commit is written to the log tree, as
// Linux's fsync does: no commit, the other files' changes stay pending.
// Anything else (directories, new or renamed files) commits; FsyncStats
// counts which.
func (w *RW) Fsync(name string) error {
	id, _, err := w.lookup(name, true)
	if err != nil {
		return pathError("fsync", name, err)
	}
	if err := w.f.Fsync(id); err != nil {
		return pathError("fsync", name, err)
	}
	return nil
}

// FsyncStats counts how fsyncs were made durable: Logged through the log
// tree, Commits by the reason a commit was needed instead.
type FsyncStats struct {
	Logged  uint64            // fsyncs written to the log tree
	Commits map[string]uint64 // fsyncs that committed, by reason
}

// FsyncStats returns the fsync counters.
func (w *RW) FsyncStats() FsyncStats {
	s := w.f.FsyncStats()
	return FsyncStats{Logged: s.Logged, Commits: s.Commits}
}
