package fsops

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Stream tails: the page cache writes a stream back in pieces (it holds
// at most its dirty limit, and the kernel's FUSE writeback sends pages in
// several requests), yet a stream should land as extents of up to 128 MiB,
// as the kernel's delalloc writeback makes them from one range. So the last
// extent a write allocated for a file is its tail: the next write that
// continues the file exactly where the tail ends grows the tail's disk
// extent by the bytes that follow it on disk (txn.Handle.ExtendData) and
// its file extent item with it, instead of allocating a new extent.
//
// A tail is grown only while nothing but its one file extent item can know
// its size: it was allocated in the running transaction (a commit writes
// its extent item, so the transid must match), its item still covers the
// whole disk extent uncompressed (not trimmed, split or rewritten), its
// one reference is the one added with it (no clone: ExtendData checks the
// queued references), and no fsync logged it: a log tree holds a copy of
// the item, so every fsync forgets all tails and none is made while one
// runs.

// tail is the extent a file's next contiguous write may grow.
type tail struct {
	transid uint64
	off     uint64 // file offset of its item
	addr    ondisk.LogicalAddr
	size    uint64 // disk bytes, = file bytes
}

func (t tail) end() uint64 { return t.off + t.size }

// growTail grows id's tail by up to n bytes for a write at file offset
// off, when the tail ends there and the disk bytes after it are free. It
// returns the disk address the bytes go to and how many it took (0: none,
// allocate a new extent). Caller holds f.mu (an operation).
func (o *op) growTail(id ondisk.InodeRef, off, n uint64) (ondisk.LogicalAddr, uint64, error) {
	f := o.f
	t, ok := f.tails[id]
	if !ok || f.logging > 0 || t.transid != o.transid || t.end() != off {
		return 0, 0, nil
	}
	n = min(n, maxExtent-t.size)
	n = alignDown(n, f.sectorSize)
	if n == 0 {
		return 0, 0, nil
	}
	es, err := o.extents(id, t.off, t.off+1)
	if err != nil {
		return 0, 0, err
	}
	if len(es) != 1 || !t.matches(&es[0]) {
		delete(f.tails, id)
		return 0, 0, nil
	}
	grown, err := o.h.ExtendData(t.addr, t.size, n)
	if err != nil || !grown {
		return 0, 0, err
	}
	addr := t.addr + ondisk.LogicalAddr(t.size)
	t.size += n
	f.tails[id] = t
	return addr, n, nil
}

// matches reports whether e is still the tail's whole, plain item.
func (t tail) matches(e *fext) bool {
	return e.off == t.off && e.Type == item.FileExtentReg && e.DiskBytenr == t.addr &&
		e.Offset == 0 && e.NumBytes == t.size && e.DiskNumBytes == t.size && e.RAMBytes == t.size &&
		e.Compression == item.CompressNone && e.Encryption == 0 && e.OtherEncoding == 0
}

// newTail records a plain extent just allocated for id at file offset off
// as its tail (unless an fsync is logging).
func (o *op) newTail(id ondisk.InodeRef, off uint64, addr ondisk.LogicalAddr, size uint64) {
	if o.f.logging > 0 {
		return
	}
	o.f.tails[id] = tail{transid: o.transid, off: off, addr: addr, size: size}
}

// forgetTails drops every tail: an fsync is about to log, or a commit
// wrote their extent items.
func (f *FS) forgetTails() { clear(f.tails) }
