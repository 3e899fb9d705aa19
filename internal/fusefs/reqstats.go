package fusefs

import "sync/atomic"

// RequestStats counts the data and attribute requests that reached the
// daemon: a read the kernel serves from its page cache is not among them,
// so a benchmark sees whether its warm reads really stayed in the kernel.
type RequestStats struct {
	Reads     uint64 // READ requests (buffered misses, readahead, O_DIRECT)
	ReadBytes uint64 // bytes asked for by them
	Getattrs  uint64 // GETATTR requests
	// ViewReads are the reads served from the last commit's trees because
	// the transaction lock was taken (a commit settling, a writeback).
	ViewReads uint64
}

// reqCounters are the live counters behind RequestStats.
type reqCounters struct {
	reads, readBytes, getattrs atomic.Uint64
}

func (c *reqCounters) read(n int) {
	c.reads.Add(1)
	c.readBytes.Add(uint64(n))
}

func (c *reqCounters) snapshot() RequestStats {
	return RequestStats{Reads: c.reads.Load(), ReadBytes: c.readBytes.Load(), Getattrs: c.getattrs.Load()}
}

// RequestStats reports the requests served since the mount was made.
func (mt *Mount) RequestStats() RequestStats {
	s := mt.m.reqs.snapshot()
	if mt.m.rw != nil {
		s.ViewReads = mt.m.rw.ops.ViewReads()
	}
	return s
}
