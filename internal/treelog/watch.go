package treelog

import (
	"sync"

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
// Its own mutex: Touched runs inside filesystem operations (under a
// transaction handle), while Writer.mu is held across a whole fsync.
type watchSet struct {
	mu  sync.Mutex
	ids map[ondisk.InodeRef]struct{}
}

func (s *watchSet) add(id ondisk.InodeRef) {
	s.mu.Lock()
	if s.ids == nil {
		s.ids = map[ondisk.InodeRef]struct{}{}
	}
	s.ids[id] = struct{}{}
	s.mu.Unlock()
}

func (s *watchSet) has(id ondisk.InodeRef) bool {
	s.mu.Lock()
	_, ok := s.ids[id]
	s.mu.Unlock()
	return ok
}

func (s *watchSet) drop(id ondisk.InodeRef) {
	s.mu.Lock()
	delete(s.ids, id)
	s.mu.Unlock()
}

func (s *watchSet) reset() {
	s.mu.Lock()
	clear(s.ids)
	s.mu.Unlock()
}

// Touched tells the writer that inode id's items are about to change or
// have changed in the running transaction (its inode item is written, made
// or deleted). Safe to call from any goroutine holding a transaction handle.
func (w *Writer) Touched(id ondisk.InodeRef) { w.watch.drop(id) }
