package diskio

import "github.com/gobtrfs/gobtrfs/internal/ondisk"

// A commit that writes its tree blocks after letting the next transaction
// run (the kernel's UNBLOCKED commit) holds them here: until they are on
// disk every read of their addresses must get them from memory, and the
// block cache may evict what it likes. Held blocks are never changed: the
// next transaction copies them (their generation is not its own).

// Hold serves ns from memory, whatever the cache evicts, until Release.
func (r *Reader) Hold(ns []*Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = make(map[ondisk.LogicalAddr]*Node, len(ns))
	}
	for _, n := range ns {
		r.held[n.Addr] = n
	}
}

// Release ends Hold of ns (written now): they move to the block cache.
func (r *Reader) Release(ns []*Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range ns {
		if r.held[n.Addr] == n {
			delete(r.held, n.Addr)
		}
		r.put(n)
	}
}
