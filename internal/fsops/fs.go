package fsops

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/fileread"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// RootDirIno is the inode number of every subvolume's top directory.
const RootDirIno = ondisk.FirstFreeObjectID

// Options tune how files are written.
type Options struct {
	// Compress compresses new regular extents with this algorithm (None: off).
	Compress compress.Alg
	// MaxInline is the largest file stored inline in the tree (the kernel's
	// max_inline mount option); 0 means the default 2048, negative disables.
	MaxInline int
	// Now returns the current time for ctime/mtime updates (time.Now if nil).
	Now func() time.Time
	// Warn receives notices of the data reader (a bad copy replaced by the
	// other, a sector no copy holds intact); nil collects them with the
	// open's other notices (fsinfo.FSInfo.Warnings).
	Warn func(string)
}

// FS applies file and directory operations to an open, writable filesystem.
type FS struct {
	tx   *txn.Engine
	info *fsinfo.FSInfo

	opts       Options
	sectorSize uint64
	nodeSize   uint32
	noHoles    bool
	extref     bool

	dev  blockdev.Device  // closed by Close when OpenImage opened it
	data *fileread.Engine // reads file data: verified, other copy tried

	mu        sync.Mutex
	nextIno   map[ondisk.ObjectID]ondisk.ObjectID // per tree: next free inode number
	nextIndex map[ondisk.InodeRef]uint64          // per directory: next DIR_INDEX
	// touched holds the data extents whose references changed since our
	// last commit, and by whom: the extent tree does not show them
	// yet, so they are overwritten in place only when this inode alone
	// changed them (see canNoCow).
	touched map[ondisk.LogicalAddr]refOwner
	// tails are the extents the files' next contiguous writes may grow,
	// and logging counts the fsyncs under way, which none may (tail.go).
	tails   map[ondisk.InodeRef]tail
	logging int

	space       dataSpace     // data space accounting (own lock)
	nocowChecks atomic.Uint64 // CanNocow calls

	// inUse says whether an inode losing its last link stays as an
	// orphan (orphan.go).
	inUse func(ondisk.InodeRef) bool

	logOnce sync.Once
	log     *treelog.Writer // fsync through the log tree (fsync.go)

	changes changeLog // which transaction last changed each inode (view.go)
}

// New wraps an open transaction layer.
func New(fi *fsinfo.FSInfo, t *txn.Engine, opts Options) *FS {
	if opts.MaxInline == 0 {
		opts.MaxInline = 2048
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	sb := fi.Super
	warn := opts.Warn
	if warn == nil {
		warn = fi.R.Warn
	}
	f := &FS{
		tx: t, info: fi, opts: opts,
		data:       fileread.New(fi.R, fileread.Options{Warn: warn}),
		sectorSize: uint64(sb.SectorSize),
		nodeSize:   sb.NodeSize,
		noHoles:    sb.IncompatFlags&ondisk.IncompatNoHoles != 0,
		extref:     sb.IncompatFlags&ondisk.IncompatExtendedIref != 0,
		nextIno:    map[ondisk.ObjectID]ondisk.ObjectID{},
		nextIndex:  map[ondisk.InodeRef]uint64{},
		touched:    map[ondisk.LogicalAddr]refOwner{},
		tails:      map[ondisk.InodeRef]tail{},
	}
	if t.Mixed() {
		f.space.wbMeta = f.writebackMeta
	}
	return f
}

// SetCompress changes the compression used for later writes.
func (f *FS) SetCompress(alg compress.Alg) {
	f.mu.Lock()
	f.opts.Compress = alg
	f.mu.Unlock()
}

// SectorSize is the filesystem's data block size.
func (f *FS) SectorSize() uint64 { return f.sectorSize }

// Commit commits the running transaction. Only the settling and freezing
// of the new trees holds f.mu: operations go on (into the next
// transaction) while the commit writes and flushes.
func (f *FS) Commit() error {
	f.mu.Lock()
	write := f.tx.StartCommit()
	clear(f.touched) // the frozen extent tree shows them now
	f.forgetTails()
	f.mu.Unlock()
	return write()
}

// commitLocked commits; the caller holds f.mu.
func (f *FS) commitLocked() error {
	if err := f.tx.Commit(); err != nil {
		return err
	}
	clear(f.touched)
	f.forgetTails()
	return nil
}

// view runs fn, which only reads, in a handle of the running transaction
// (so it sees what earlier operations of it wrote). It skips what run
// does for a change: f.mu (fsops' own maps are not read), the clock, the
// tree map made up front, the space accounting. A READ request runs as a
// view.
func (f *FS) view(fn func(o *op) error) error {
	h, err := f.tx.Begin()
	if err != nil {
		return err
	}
	defer h.End()
	return fn(&op{f: f, h: h, a: h.Alloc(), transid: uint64(h.Transid())})
}

// op is one operation's context: a transaction handle and the trees it touched.
type op struct {
	f       *FS
	h       *txn.Handle
	a       ctree.Allocator
	transid uint64 // of the running transaction; reserve refreshes it (it may commit)
	now     item.Timespec
	trees   map[ondisk.ObjectID]*ctree.Tree

	// ownRsv is the ReserveData reservation the operation consumes
	// (WriteAtReserved); retried is set on the run after a space commit.
	ownRsv  uint64
	retried bool
}

// run executes fn in a handle of the current transaction. When fn finds
// too little data space while freed space is pinned (errSpaceRetry, before
// it changed anything), run commits and runs it once more.
func (f *FS) run(fn func(o *op) error) error {
	return f.runReserved(0, fn)
}

// runReserved is run for an operation that consumes rsv bytes of a
// ReserveData reservation: they are released when it succeeds.
func (f *FS) runReserved(rsv uint64, fn func(o *op) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.runOnce(rsv, false, fn)
	var retry *errSpaceRetry
	if errors.As(err, &retry) {
		if err := f.commitLocked(); err != nil {
			return err
		}
		f.space.mu.Lock()
		f.space.stats.SpaceCommits++
		f.space.mu.Unlock()
		err = f.runOnce(rsv, true, fn)
	}
	return err
}

func (f *FS) runOnce(rsv uint64, retried bool, fn func(o *op) error) error {
	h, err := f.tx.Begin()
	if err != nil {
		return err
	}
	defer h.End()
	o := &op{f: f, h: h, a: h.Alloc(), transid: uint64(h.Transid()),
		now: item.TimespecOf(f.opts.Now()), trees: map[ondisk.ObjectID]*ctree.Tree{},
		ownRsv: rsv, retried: retried}
	err = fn(o)
	consumed := rsv
	if err != nil {
		consumed = 0
	}
	f.endSpace(h, true, consumed)
	return err
}

// tree returns subvolume (or global) tree id.
func (o *op) tree(id ondisk.ObjectID) (*ctree.Tree, error) {
	if t, ok := o.trees[id]; ok {
		return t, nil
	}
	if o.h == nil { // a read from the last commit (view.go) asked for another tree
		return nil, fmt.Errorf("tree %s: not in this read's view: %w", ondisk.TreeName(id), fsinfo.ErrNoTree)
	}
	t, err := o.h.Tree(id)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", ondisk.TreeName(id), err)
	}
	if o.trees == nil {
		o.trees = map[ondisk.ObjectID]*ctree.Tree{} // a view makes none up front
	}
	o.trees[id] = t
	return t, nil
}

// CommittedGeneration is the generation of the last commit on disk.
func (f *FS) CommittedGeneration() ondisk.Generation { return f.tx.Super().Generation }

// Trim discards the filesystem's free space (FITRIM, txn.Engine.Trim) and
// returns the bytes discarded.
func (f *FS) Trim(r txn.TrimRange) (uint64, error) { return f.tx.Trim(r) }
