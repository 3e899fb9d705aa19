package treelog

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// watchSet holds the inodes whose planner memo is known current: the
// filesystem reports every change of an inode's items (Writer.Touched,
// called wherever it writes an inode item, which every change of the
// inode's items does), and a touched inode leaves the set. A planner that
// finds an inode in the set reuses its memo without reading the inode item
// again, so planning an fsync costs no tree lookup per inode already logged
// and unchanged since.
//
// Every use happens under a transaction handle (the engine's lock): the
// filesystem's operations call Touched inside theirs, the planner runs in
// the fsync's; the handle orders them, so the set needs no lock of its own
// (Writer.mu cannot serve: it is held across a whole fsync, which waits
// for a handle).
type watchSet struct {
	ids map[ondisk.InodeRef]struct{}
}

func (s *watchSet) add(id ondisk.InodeRef) {
	if s.ids == nil {
		s.ids = map[ondisk.InodeRef]struct{}{}
	}
	s.ids[id] = struct{}{}
}

func (s *watchSet) has(id ondisk.InodeRef) bool {
	_, ok := s.ids[id]
	return ok
}

// drop takes id out of the set and reports whether it was in it.
func (s *watchSet) drop(id ondisk.InodeRef) bool {
	if _, ok := s.ids[id]; !ok {
		return false
	}
	delete(s.ids, id)
	return true
}

func (s *watchSet) reset() { clear(s.ids) }

// Touched tells the writer that inode id's items are about to change or
// have changed in the running transaction (its inode item is written, made
// or deleted). The caller holds a transaction handle.
func (w *Writer) Touched(id ondisk.InodeRef) {
	if w.watch.drop(id) {
		w.dropped = append(w.dropped, id) // the kept plan visits it again (writeincr.go)
	}
	w.dirs.touched(id)
}

// DirIndexChanged tells the writer that the DIR_INDEX item index of
// directory dir was inserted or deleted in the running transaction. The
// caller holds a transaction handle.
func (w *Writer) DirIndexChanged(dir ondisk.InodeRef, index uint64) { w.dirs.changed(dir, index) }
