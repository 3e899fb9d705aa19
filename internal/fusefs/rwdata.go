package fusefs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// wbBackend is the page cache's way to disk: each contiguous dirty range
// becomes one fsops.WriteAt (which cuts it into extents of up to 128 MiB),
// so buffered 4 KiB writes land as large extents (delayed allocation).
type wbBackend struct{ r *rwState }

func (w wbBackend) WriteBack(k ondisk.InodeRef, off int64, data []byte) error {
	r := w.r
	rsv := r.takeReserve(sectorSpan(off, len(data)) - r.nocowTake(k, sectorSpan(off, len(data))))
	// The write happened when it was buffered, not now: the times stay
	// those the kernel owns (writeback cache), or become those of the
	// buffered write; one fsops operation, so a SETATTR of the times
	// cannot land between the write and the times and be undone.
	r.mu.Lock()
	var mtime, ctime time.Time
	if st := r.open[k]; st != nil {
		mtime, ctime = st.mtime, st.lastWrite
	}
	r.mu.Unlock()
	var err error
	if mtime.IsZero() && !r.kernelTimes {
		_, err = r.ops.WriteAtHeld(k, uint64(off), data, uint64(rsv)) // written at no known time: now
	} else {
		_, err = r.ops.WriteAtTimesHeld(k, uint64(off), data, mtime, ctime, uint64(rsv))
	}
	if err != nil {
		r.rsv.Add(rsv) // still held (fsops releases it only on success)
	}
	if isGone(err) {
		return nil // deleted meanwhile: nothing to keep
	}
	return err
}

func isGone(err error) bool { return errors.Is(err, syscall.ENOENT) }

// read returns file bytes at off: on-disk bytes with dirty bytes over
// them, up to the end of the file (on disk or buffered, whichever is longer).
func (r *rwState) read(id ondisk.InodeRef, dest []byte, off int64) ([]byte, *attr, error) {
	if r.cache.Clean(id) {
		// nothing of id is buffered, before the read nor after it: no
		// writeback moved its bytes between the cache and the disk under
		// the read (bytes of a write that came and went meanwhile belong
		// to a write overlapping it), so it need not wait for wbMu, which
		// writebacks of other inodes take. Otherwise, or on any error, the
		// locked path reads again and decides.
		n, x, err := r.ops.ReadInto(id, uint64(off), dest)
		if err == nil && r.cache.Clean(id) {
			return r.overlayRead(id, dest, dest[:n], off, &x)
		}
	}
	r.wbMu.RLock()
	defer r.wbMu.RUnlock()
	k := id
	n, x, err := r.ops.ReadInto(id, uint64(off), dest) // clipped at the on-disk size
	data := dest[:n]
	if errors.Is(err, diskio.ErrCorrupt) {
		data, err = r.readAroundDirty(id, k, int64(len(dest)), off, err)
	}
	if err != nil {
		return nil, nil, err
	}
	return r.overlayRead(id, dest, data, off, &x)
}

// overlayRead lays id's buffered bytes over data, the on-disk bytes at off
// read into dest (x: the inode item the read saw; zero Mode if none), and
// returns them with the attributes getattr shows for the atime.
func (r *rwState) overlayRead(id ondisk.InodeRef, dest, data []byte, off int64, x *item.InodeItem) ([]byte, *attr, error) {
	k := id
	var a *attr // the attributes as getattr shows them, for the atime
	if x.Mode != 0 {
		v := attrOfItem(x)
		r.overlay(id, &v)
		a = &v
	}
	dirtyEnd := r.cache.DirtyEnd(k)
	if dirtyEnd <= off {
		return data, a, nil
	}
	if n := int(min(int64(len(dest)), dirtyEnd-off)); n > len(data) {
		have := len(data)
		if cap(data) >= n {
			data = data[:n]
		} else {
			data = append(data, make([]byte, n-have)...)
		}
		clear(data[have:])
	}
	r.cache.Overlay(k, data, off)
	return data, a, nil
}

// readAroundDirty retries a read that met damaged on-disk data, taking
// from disk only the bytes no dirty data covers: what is still in the page
// cache is served from memory, as the kernel would. It returns the first
// error again when a damaged sector is in a range read from disk.
func (r *rwState) readAroundDirty(id ondisk.InodeRef, k ondisk.InodeRef, n, off int64, first error) ([]byte, error) {
	clean := r.cache.CleanRanges(k, off, n)
	if len(clean) == 1 && clean[0] == [2]int64{off, off + n} {
		return nil, first // nothing dirty there
	}
	data := make([]byte, n)
	end := int64(0) // end of the on-disk bytes read
	for _, c := range clean {
		b, err := r.ops.ReadAt(id, uint64(c[0]), int(c[1]-c[0]))
		if err != nil {
			return nil, err
		}
		copy(data[c[0]-off:], b)
		if len(b) > 0 {
			end = c[0] + int64(len(b)) - off
		}
	}
	// the caller extends to the dirty end and lays the dirty bytes over
	return data[:end], nil
}

// write buffers data at off. It refuses with ENOSPC when the data space
// for it cannot be reserved even after writing everything back and
// committing (space is reserved when the write is accepted, as btrfs
// reserves delalloc space; datarsv.go).
// direct: the open bypasses the kernel's cache (lowSpaceOpen), so in the
// writeback cache mode the kernel stamps no time for it: the daemon does.
func (r *rwState) write(id ondisk.InodeRef, data []byte, off int64, direct bool) (int, error) {
	r.writes.Add(1)
	r.unplacedSpans.Add(1)
	defer r.unplacedSpans.Add(-1) // after the cache counts the range
	if err := r.holdMeta(); err != nil {
		return 0, err
	}
	need := sectorSpan(off, len(data))
	head := r.needsHead(id, off)
	if head {
		need += int64(r.ops.SectorSize())
	}
	r.unplaced.Add(need)
	held, err := r.reserve(id, off, len(data), need)
	if err != nil {
		r.unplaced.Add(-need)
		return 0, err
	}
	l := r.lock(id)
	l.Lock()
	if head {
		if b := r.inlineHead(id, off); b != nil {
			err = r.cache.Write(id, 0, b)
		} else {
			r.unreserve(int64(r.ops.SectorSize())) // another write took care of it
		}
	}
	if err == nil {
		err = r.cache.Write(id, off, data)
	}
	r.unplaced.Add(-need)
	now := now()
	if !r.kernelTimes || direct {
		r.mu.Lock()
		if st := r.open[id]; st != nil {
			st.mtime, st.lastWrite = now, now
			st.selfTimes = r.kernelTimes
		}
		r.mu.Unlock()
	}
	l.Unlock()
	if err != nil {
		r.unreserve(held)
		return 0, err
	}
	r.throttle(id)
	return len(data), nil
}

// A write past the first sector of a file whose data is an inline extent
// makes its writeback rewrite that extent as a regular one (fsops
// addUninline): a sector of data space the write does not touch. Near a
// full filesystem that sector was missing at writeback, and the write,
// taken, was lost (the mount showed 12288 bytes, 98 on disk). So such a
// write buffers the first sector too (the file's bytes, zeros past its
// end, which the write makes part of the file), with its data space.

// needsHead reports whether a write at off of id may need its first
// sector buffered (inlineHead): the file is shorter than a sector on
// disk and nothing past its first sector is buffered.
func (r *rwState) needsHead(id ondisk.InodeRef, off int64) bool {
	s := int64(r.ops.SectorSize())
	if off < s || r.cache.DirtyEnd(id) >= s {
		return false
	}
	x, err := r.ops.Stat(id)
	return err == nil && x.Size > 0 && int64(x.Size) < s
}

// inlineHead returns id's first sector as the file shows it for a write at
// off (zeros past its end), when needsHead holds and the sector is not
// wholly buffered already; else nil. Caller holds id's lock.
func (r *rwState) inlineHead(id ondisk.InodeRef, off int64) []byte {
	s := int64(r.ops.SectorSize())
	if !r.needsHead(id, off) {
		return nil
	}
	head := make([]byte, s)
	b, _, err := r.read(id, head, 0)
	if err != nil {
		return nil
	}
	if len(b) > 0 && &b[0] != &head[0] {
		copy(head, b)
	}
	clear(head[len(b):])
	return head
}

// reserve holds need bytes of data space for a write of n bytes at off of
// id (r.rsv) and returns what it holds, or fails with ENOSPC. When fsops
// refuses, space is made the way the kernel's flushing of delalloc does:
// buffered data is written back (its writeback may need less than was
// held: compression, overwrites), what the pool holds beyond what is still
// buffered goes back, and a commit unpins freed space. Only when all that
// fails is the write asked whether it can go in place (NODATACOW or
// preallocated extents, not shared), as seed 001's fix orders it: then it
// is taken holding nothing.
func (r *rwState) reserve(id ondisk.InodeRef, off int64, n int, need int64) (int64, error) {
	return r.reserveWith(id, off, n, need, r.flushAll)
}

// reserveWith is reserve with flush as the way to write everything back
// (a caller holding wbMu cannot use flushAll).
func (r *rwState) reserveWith(id ondisk.InodeRef, off int64, n int, need int64, flush func() error) (int64, error) {
	try := func() bool {
		if r.ops.ReserveData(uint64(need)) != nil {
			return false
		}
		r.rsv.Add(need)
		return true
	}
	if try() {
		return need, nil
	}
	if err := flush(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return 0, err
	}
	r.trimReserve()
	if try() {
		return need, nil
	}
	// Space freed in this transaction is usable after the commit.
	if err := r.ops.Commit(); err != nil {
		return 0, err
	}
	if try() {
		return need, nil
	}
	// An unlinked file whose last close is still on its way (the kernel
	// sends RELEASE after close(2) has returned) holds its space until
	// that release: give such releases a moment, as a close on kernel
	// btrfs frees the inode before it returns.
	for i := 0; i < 10 && r.hiddenOpen(); i++ {
		time.Sleep(20 * time.Millisecond)
		if err := r.ops.Commit(); err != nil {
			return 0, err
		}
		r.trimReserve()
		if try() {
			return need, nil
		}
	}
	if ok, err := r.ops.CanNocow(id, off, int64(n)); err == nil && ok {
		r.nocowAccepted(id, need)
		return 0, nil
	}
	return 0, fmt.Errorf("write of %d bytes: %w", n, syscall.ENOSPC)
}

// hiddenOpen reports whether an open file has lost its last name (it is
// deleted by its last release; orphan.go).
func (r *rwState) hiddenOpen() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.open {
		if st.orphan {
			return true
		}
	}
	return false
}

// throttle follows a buffered write. The bytes counted are those the page
// cache holds, dirty or in writeback (pagecache.Cache.Pending, as the
// kernel counts NR_DIRTY and NR_WRITEBACK): above half the limit the
// flusher is woken; above the limit the writer waits for the flusher (as the
// kernel's balance_dirty_pages makes writers wait, rather than write back
// themselves: a writer writing everything back would also write the holes
// of streams whose WRITEs are still on their way), and writes back itself
// only when the flusher does not bring the dirty bytes under the limit
// soon.
//
// As the kernel's per-task ratelimit (balance_dirty_pages_ratelimited), a
// write to an inode with little buffered data (lightWriter) does not wait
// for the others' writeback, up to twice the limit: the WRITE of a 100-byte
// change that an fsync sent waited up to 300 ms behind a 1 GiB stream
// (`gobtrfs bench fsync`, the first small fsync).
func (r *rwState) throttle(id ondisk.InodeRef) {
	d := r.cache.Pending()
	if d <= r.limit/2 {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	if d <= r.limit {
		return
	}
	if d <= 2*r.limit && r.cache.DirtyBlocksFrom(id, 0, 4096) <= min(lightWriter, r.limit/16) {
		return
	}
	for i := 0; i < throttleWaits && r.cache.Pending() > r.limit; i++ {
		time.Sleep(throttleWait)
	}
	if r.cache.Pending() > r.limit {
		if err := r.flushAll(); err != nil {
			r.m.logf("writeback over the dirty limit: %v", err)
		}
	}
}

// A writer over the dirty limit waits up to throttleWaits times
// throttleWait for the flusher (longer than the flusher waits for a hole,
// pagecache's holeWait).
const (
	throttleWait  = 2 * time.Millisecond
	throttleWaits = 150
)

// lightWriter: an inode with at most this much buffered (or a sixteenth
// of the dirty limit) is not throttled below twice the limit.
const lightWriter = 1 << 20

// flushAll writes back every inode on the writeback list (only those),
// holding wbMu exclusively around each range's write only: readers and
// getattr wait for one range at most, never for the whole writeback.
func (r *rwState) flushAll() error {
	err := r.cache.SyncEach(&r.wbMu)
	r.flushAtimes(nil)
	r.trimReserve()
	return err
}

// flushSettled is the background writeback: flushAll, but the last hold
// bytes of each stream stay dirty (pagecache.SyncSettled): the
// kernel is still sending pages there, out of order, and writing them now
// would cut the stream's extent at every hole.
// It returns how many streams it left for a hole still arriving.
func (r *rwState) flushSettled(hold int64) (int, error) {
	waiting, err := r.cache.SyncSettled(&r.wbMu, hold)
	r.flushAtimes(nil)
	return waiting, err
}

// background writes back settled data until the dirty bytes are at most
// half the limit, or only the held ends of streams are left: a pass that
// left a stream for a hole is tried again shortly. Over the limit (writers
// are waiting) it writes everything.
func (r *rwState) background() {
	for r.cache.Pending() > r.limit/2 {
		before := r.cache.Pending()
		hold := r.settleHold()
		if before > r.limit {
			hold = 0
		}
		waiting, err := r.flushSettled(hold)
		if err != nil {
			r.m.logf("background writeback: %v", err)
			return
		}
		if r.cache.Pending() < before {
			continue
		}
		if waiting == 0 {
			return // nothing settled: writers over the limit write back
		}
		select {
		case <-r.stop:
			return
		case <-time.After(throttleWait):
		}
	}
}

// settleHold is how much of a stream's end background writeback leaves:
// many WRITEs of max_write (1 MiB) each, well under half the dirty limit.
func (r *rwState) settleHold() int64 { return min(16<<20, r.limit/8) }

// flushInode writes back id's dirty data. Caller holds wbMu exclusively.
func (r *rwState) flushInodeLocked(id ondisk.InodeRef) error {
	return r.cache.Fsync(id)
}

// syncAll writes everything back and commits: syncfs, unmount, fsyncdir
// and BTRFS_IOC_SYNC.
func (r *rwState) syncAll() error {
	if err := r.flushAll(); err != nil {
		return err
	}
	return r.ops.Commit()
}

// syncWithKernel is syncAll for an explicit sync (BTRFS_IOC_SYNC,
// Mount.Sync). In the writeback cache mode the kernel holds written pages
// and times the daemon has not seen: a syncfs of the mount sends them
// first, as the kernel's btrfs writes its delalloc before such a commit.
// FUSE has no request that asks the kernel for them, and the kernel's
// syncfs does not wait for a FUSE daemon's replies (it may be untrusted):
// the WRITEs it starts are waited for until none came for a while (at
// most a few seconds). The syncfs runs in this request's goroutine while
// others serve the WRITEs.
func (r *rwState) syncWithKernel() error {
	r.kernelPages()
	return r.syncAll()
}

// kernelPages has the kernel send the pages and times it holds (writeback
// cache mode; see syncWithKernel) and waits for the WRITEs to stop.
func (r *rwState) kernelPages() {
	if r.kernelTimes && r.m.mountpoint != "" {
		if d, err := os.Open(r.m.mountpoint); err == nil {
			err = unix.Syncfs(int(d.Fd()))
			d.Close()
			if err != nil {
				r.m.logf("sync: syncfs %s: %v", r.m.mountpoint, err)
			}
			r.writesQuiet(50*time.Millisecond, 5*time.Second)
		}
	}
}

// writesQuiet waits until no WRITE came for quiet, or for at most limit.
func (r *rwState) writesQuiet(quiet, limit time.Duration) {
	end := time.Now().Add(limit)
	last, since := r.writes.Load(), time.Now()
	for time.Now().Before(end) {
		time.Sleep(quiet / 5)
		if n := r.writes.Load(); n != last {
			last, since = n, time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
	}
}

// fsync makes id durable: its data written back (that inode's only), then
// the log tree (no commit) or, where fsops cannot log it, a full commit.
func (r *rwState) fsync(id ondisk.InodeRef) error {
	err := r.cache.FsyncEach(id, &r.wbMu) // wbMu around each range, as flushAll
	r.trimMeta()
	if err != nil {
		return err
	}
	r.flushAtimes(&id)
	return r.ops.Fsync(id)
}

// fsyncDir makes directory id durable: every buffered write goes back
// (the log takes the directory's new children whole), then the log tree.
func (r *rwState) fsyncDir(id ondisk.InodeRef) error {
	if err := r.flushAll(); err != nil {
		return err
	}
	return r.ops.Fsync(id)
}

// withData runs fn, which changes id's data on disk, with id's buffered
// data written back first and writeback held off.
func (r *rwState) withData(id ondisk.InodeRef, fn func() error) error {
	l := r.lock(id)
	l.Lock()
	defer l.Unlock()
	r.wbMu.Lock()
	defer r.wbMu.Unlock()
	if err := r.flushInodeLocked(id); err != nil {
		return err
	}
	err := fn()
	r.diskTimes(id)
	return err
}

// diskTimes forgets the buffered mtime of id after an operation that set
// the times on disk itself (all its buffered data was written back before).
func (r *rwState) diskTimes(id ondisk.InodeRef) {
	r.mu.Lock()
	if st := r.open[id]; st != nil {
		st.mtime, st.lastWrite = time.Time{}, time.Time{}
	}
	r.mu.Unlock()
}

// setattr applies a SETATTR. A size change drops or writes back buffered
// data first. An explicit mtime also becomes the one buffered data is
// written back with, so later writeback keeps it.
//
// Times of a size change: FUSE sends no mtime for ftruncate(2) and
// open(O_TRUNC) (withFile: the request names an open file) and none for
// truncate(2) either unless the kernel owns the times. As on a kernel btrfs
// mount, truncate(2) to a new size sets mtime and ctime to now
// (btrfs_setsize), and ftruncate(2) / O_TRUNC set them even when the size
// stays (the VFS passes ATTR_MTIME|ATTR_CTIME there); truncate(2) to the
// same size changes nothing, not even ctime. The size compared is the one
// the caller sees: buffered data counts. Without atomic_o_trunc the
// kernel sends open(O_TRUNC) as a size-0 SETATTR without a file, the same
// request truncate(2) to 0 makes: an empty file truncated to 0 that way
// gets new times, as open(O_TRUNC) gives on the kernel.
func (r *rwState) setattr(id ondisk.InodeRef, a fsops.SetAttr, withFile bool) error {
	if a.Valid&fsops.SetAtime != 0 {
		r.dropAtime(id)
	}
	setTime := func() {
		if a.Valid&fsops.SetMtime != 0 {
			r.mu.Lock()
			if st := r.open[id]; st != nil {
				st.mtime = a.Mtime
			}
			r.mu.Unlock()
		}
	}
	if a.Valid&fsops.SetSize == 0 {
		l := r.lock(id)
		l.Lock()
		defer l.Unlock()
		r.keepCtime(id, &a) // ctimestale.go
		setTime()
		_, err := r.ops.Setattr(id, a)
		return err
	}
	l := r.lock(id)
	l.Lock()
	defer l.Unlock()
	r.wbMu.Lock()
	defer r.wbMu.Unlock()
	if !r.kernelTimes && a.Valid&fsops.SetMtime == 0 {
		x, err := r.ops.Stat(id)
		if err != nil {
			return err
		}
		size := max(x.Size, uint64(max(r.cache.DirtyEnd(id), 0)))
		if size == a.Size && !withFile && a.Size != 0 && a.Valid&^fsops.SetSize == 0 {
			return nil // truncate(2) to the size it has
		}
		if withFile || size != a.Size || a.Size == 0 {
			now := now()
			a.Valid |= fsops.SetMtime | fsops.SetCtime
			a.Mtime, a.Ctime = now, now
		}
	}
	r.cache.Truncate(id, int64(a.Size))
	if err := r.flushInodeLocked(id); err != nil {
		return err
	}
	r.diskTimes(id)
	r.keepCtime(id, &a) // ctimestale.go
	setTime()
	_, err := r.ops.Setattr(id, a)
	return err
}

// fallocate preallocates or punches (fsops modes).
//
// In the writeback cache mode the kernel keeps a regular file's mtime and
// ctime and takes neither from the daemon (fuse_get_cache_mask), and a
// FALLOCATE changes them only when it grows the file, and then the kernel
// sends its own times later (fuse_file_fallocate: file_update_time). So
// the times stored stay those the kernel shows: a punched hole does not
// leave the image with a newer mtime than anyone saw (TestFileOps failed
// now and then when a clock tick fell between create and punch).
func (r *rwState) fallocate(id ondisk.InodeRef, off, n uint64, mode uint32) error {
	return r.withData(id, func() error {
		if !r.kernelTimes {
			return r.ops.Fallocate(id, mode, off, n)
		}
		x, err := r.ops.Stat(id)
		if err != nil {
			return err
		}
		if err := r.ops.Fallocate(id, mode, off, n); err != nil {
			return err
		}
		if x.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return nil
		}
		_, err = r.ops.Setattr(id, fsops.SetAttr{Valid: fsops.SetMtime | fsops.SetCtime,
			Mtime: x.Mtime.Time(), Ctime: x.Ctime.Time()})
		return err
	})
}

// seekData answers SEEK_DATA / SEEK_HOLE with buffered data written back.
func (r *rwState) seekData(id ondisk.InodeRef, off int64, data bool) (int64, error) {
	r.wbMu.Lock()
	defer r.wbMu.Unlock()
	if err := r.flushInodeLocked(id); err != nil {
		return 0, err
	}
	return r.SeekData(id, off, data)
}

// copyRange copies n bytes of src at srcOff to dst at dstOff: a reflink
// (fsops.Clone) where btrfs allows one, else a buffered copy. It returns
// the bytes copied (clipped at the end of src).
func (r *rwState) copyRange(src ondisk.InodeRef, srcOff uint64, dst ondisk.InodeRef, dstOff uint64, n uint64) (uint64, error) {
	i, j := lockIndex(src), lockIndex(dst)
	if i > j {
		i, j = j, i
	}
	a, b := &r.locks[i], &r.locks[j]
	if a != b {
		a.Lock()
		defer a.Unlock()
		b.Lock()
		defer b.Unlock()
	} else {
		a.Lock()
		defer a.Unlock()
	}
	r.wbMu.Lock()
	defer r.wbMu.Unlock()
	if err := r.flushInodeLocked(src); err != nil {
		return 0, err
	}
	if err := r.flushInodeLocked(dst); err != nil {
		return 0, err
	}
	sx, err := r.ops.Stat(src)
	if err != nil {
		return 0, err
	}
	if srcOff >= sx.Size {
		return 0, nil
	}
	n = min(n, sx.Size-srcOff, 1<<30)
	if r.canClone(src, srcOff, dst, dstOff, n, sx.Size) {
		err := r.ops.Clone(src, srcOff, dst, dstOff, n)
		if err == nil {
			r.diskTimes(dst)
			return n, nil
		}
		if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.EXDEV) {
			return 0, err
		}
	}
	done, err := r.copyBuffered(src, srcOff, dst, dstOff, n)
	if done > 0 {
		return done, nil // a short copy: the caller asks again for the rest
	}
	return 0, err
}

// canClone reports whether the ranges meet the reflink rules: sector
// aligned (the length may end at the end of src), not overlapping within a
// file, same subvolume tree or not (btrfs clones across subvolumes).
func (r *rwState) canClone(src ondisk.InodeRef, srcOff uint64, dst ondisk.InodeRef, dstOff, n, srcSize uint64) bool {
	ss := r.ops.SectorSize()
	if srcOff%ss != 0 || dstOff%ss != 0 {
		return false
	}
	if n%ss != 0 && srcOff+n != srcSize {
		return false
	}
	if src == dst && srcOff < dstOff+n && dstOff < srcOff+n {
		return false
	}
	return true
}

// copyBuffered copies through the page cache and returns the bytes
// copied. Caller holds wbMu. Each piece holds its data space and
// metadata as a WRITE does (write): a copy the filesystem has no room
// for comes up short, or fails with ENOSPC when nothing was copied, as on
// the kernel's btrfs (whose copy falls back to splicing through its
// buffered write). Before, the bytes were taken and their writeback
// failed: fsync said ENOSPC and the unmount lost them.
func (r *rwState) copyBuffered(src ondisk.InodeRef, srcOff uint64, dst ondisk.InodeRef, dstOff uint64, n uint64) (uint64, error) {
	const chunk = 1 << 20
	// we hold wbMu: make room with the writeback that needs no wbMu
	flush := func() error {
		err := r.cache.Sync()
		r.trimReserve()
		return err
	}
	done := uint64(0)
	defer func() {
		if done > 0 && !r.kernelTimes {
			now := now()
			r.mu.Lock()
			if st := r.open[dst]; st != nil {
				st.mtime, st.lastWrite = now, now
			}
			r.mu.Unlock()
		}
	}()
	for done < n {
		c := min(chunk, n-done)
		data, err := r.ops.ReadAt(src, srcOff+done, int(c))
		if err != nil {
			return done, err
		}
		if len(data) == 0 {
			break
		}
		if err := r.copyPiece(dst, int64(dstOff+done), data, flush); err != nil {
			return done, err
		}
		done += uint64(len(data))
	}
	return done, nil
}

// copyPiece buffers data at off of id for copyBuffered: its metadata and
// data space held first (holdMetaWith, reserveWith, with flush to make room).
func (r *rwState) copyPiece(id ondisk.InodeRef, off int64, data []byte, flush func() error) error {
	r.unplacedSpans.Add(1)
	defer r.unplacedSpans.Add(-1)
	if err := r.holdMetaWith(flush); err != nil {
		return err
	}
	need := sectorSpan(off, len(data))
	r.unplaced.Add(need)
	held, err := r.reserveWith(id, off, len(data), need, flush)
	if err != nil {
		r.unplaced.Add(-need)
		return err
	}
	err = r.cache.Write(id, off, data)
	r.unplaced.Add(-need)
	if err != nil {
		r.unreserve(held)
	}
	return err
}

// flusher writes back and commits every interval, and writes back early
// when woken by writers over half the dirty limit.
func (r *rwState) flusher() {
	defer close(r.done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-r.kick:
			r.background()
		case <-t.C:
			if err := r.syncAll(); err != nil {
				r.m.logf("periodic commit: %v", err)
			}
		}
	}
}

// close writes everything back, removes hidden names left (all files are
// closed once the kernel is gone), commits and closes the image.
func (r *rwState) close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	err := r.flushAll()
	if e := r.dropAllOrphans(); err == nil {
		err = e
	}
	return errors.Join(err, r.ops.Close())
}
