package gobtrfs

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// writeBufMax bounds the bytes one RW gathers before writing them: a
// stream of small WriteAt calls becomes writes (and extents) of this size.
const writeBufMax = 32 << 20

// writeBuf gathers consecutive WriteAt calls to one file (each starting
// where the previous ended) and writes them as one, as the kernel's page
// cache does before writeback: no path walk, transaction or extent per
// call. The space is reserved when a call is accepted, so ENOSPC comes
// from WriteAt itself. Every other RW operation writes the buffer first
// (settle, from the path resolvers), so none sees the file without it; an
// error of that write is returned by the operation that caused it.
type writeBuf struct {
	mu   sync.Mutex
	name string
	id   ondisk.InodeRef
	off  int64
	data []byte
	rsv  uint64 // reserved for data
	// gen counts the RW operations that changed what names resolve to
	// (remove, rename, subvolume delete), bumped when each ends; the
	// buffer keeps the count read before its name was resolved, and a
	// write that names the buffer's file by name continues it only if
	// no such operation ended since: else a WriteAt after a rename of
	// the file (by another goroutine, between that resolution and the
	// write being gathered) would land in the renamed file.
	gen    atomic.Uint64
	bufGen uint64
}

// appendable reports whether a write of n bytes at off to name, whose
// caller read gen before resolving anything, continues the buffer and
// fits.
func (b *writeBuf) appendable(name string, gen uint64, off int64, n int) bool {
	return len(b.data) > 0 && b.name == name && b.bufGen == gen && off == b.off+int64(len(b.data)) && len(b.data)+n <= writeBufMax
}

// namesChanged is deferred by the operations that change what a name
// resolves to.
func (w *RW) namesChanged() { w.wb.gen.Add(1) }

// flushLocked writes the buffer out. b.mu is held.
func (b *writeBuf) flushLocked(f *fsops.FS) error {
	if len(b.data) == 0 {
		return nil
	}
	data, rsv, name := b.data, b.rsv, b.name
	b.data, b.rsv = b.data[:0], 0
	if _, err := f.WriteAtReserved(b.id, uint64(b.off), data, rsv); err != nil {
		f.ReleaseData(rsv)
		return pathError("write", name, err)
	}
	return nil
}

// settle writes out what WriteAt gathered.
func (w *RW) settle() error {
	w.wb.mu.Lock()
	defer w.wb.mu.Unlock()
	return w.wb.flushLocked(w.f)
}

// bufferedWrite offers a write to the buffer; it reports whether the
// buffer took it (then n is len(data)).
func (w *RW) bufferedWrite(name string, id *ondisk.InodeRef, gen uint64, data []byte, off int64) (bool, error) {
	if len(data) >= writeBufMax/4 {
		return false, w.settle()
	}
	b := w.wb
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.appendable(name, gen, off, len(data)) {
		if id == nil {
			return false, b.flushLocked(w.f)
		}
		if err := b.flushLocked(w.f); err != nil {
			return false, err
		}
		b.name, b.id, b.off, b.bufGen = name, *id, off, gen
	}
	if err := w.f.ReserveData(uint64(len(data))); err != nil {
		// Too little space for more buffered data: write what is
		// buffered and let this write find out for itself.
		return false, b.flushLocked(w.f)
	}
	b.rsv += uint64(len(data))
	if b.data == nil {
		b.data = make([]byte, 0, writeBufMax)
	}
	b.data = append(b.data, data...)
	return true, nil
}

// startCommitTimer commits every d as RW.Commit does: what WriteAt
// gathered goes in too (the engine's own timer does not know the buffer,
// and a stream of small appends would stay in memory until another call).
func (w *RW) startCommitTimer(d time.Duration) {
	w.timerStop, w.timerDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(w.timerDone)
		tk := time.NewTicker(d)
		defer tk.Stop()
		for {
			select {
			case <-w.timerStop:
				return
			case <-tk.C:
				if err := w.Commit(); err != nil {
					return // as the engine's timer: the next call reports it
				}
			}
		}
	}()
}

// stopCommitTimer stops the timer and waits for a commit it started.
func (w *RW) stopCommitTimer() {
	if w.timerStop == nil {
		return
	}
	w.timerOnce.Do(func() { close(w.timerStop) })
	<-w.timerDone
}

// gatherable reports whether writes to id may be gathered: a regular file
// of a writable subvolume. Others (a fifo, a file of a read-only
// snapshot) are written at once, so their error (EINVAL, EROFS) is the
// WriteAt's, not that of whichever later call writes the buffer out.
func (w *RW) gatherable(id ondisk.InodeRef) bool {
	x, err := w.f.Stat(id)
	if err != nil || x.Mode&item.SIFMT != item.SIFREG {
		return false
	}
	ro, err := w.f.SubvolumeReadonly(id.Root)
	return err == nil && !ro
}
