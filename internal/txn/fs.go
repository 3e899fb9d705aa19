package txn

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockgroup"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/extent"
	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// ErrLogTree is returned by Open for an image with a log tree to replay
// when no OpenOptions.ReplayLog is given.
var ErrLogTree = errors.New("filesystem has a log tree to replay (mount it with Linux once, or replay it first)")

// Engine is a filesystem open for writing. mirrors struct btrfs_fs_info (the writer's part)
type Engine struct {
	Info *fsinfo.FSInfo

	// mu is held by a Handle from Begin to End and by Commit.
	mu sync.Mutex

	transid ondisk.Generation  // the running (next) transaction
	super   *ondisk.Superblock // what the next commit writes
	fsid    ondisk.UUID        // metadata fsid of tree block headers
	ctUUID  ondisk.UUID        // chunk tree uuid of tree block headers
	bgTree  ondisk.ObjectID
	fst     bool
	skinny  bool
	mixed   bool // INCOMPAT_MIXED_GROUPS: data and metadata share DATA|METADATA groups (mixed.go)

	groups *blockgroup.Manager
	refs   *delayedref.Queue
	ext    *extent.Manager

	trees   map[ondisk.ObjectID]*treeState
	dirty   map[ondisk.LogicalAddr]*diskio.Node // tree blocks to write at commit
	newData map[ondisk.LogicalAddr]uint64       // data extents allocated, no reference queued yet

	metaRsv    uint64                // metadata bytes reserved by handles and not yet used
	metaHeld   atomic.Uint64         // metadata held for buffered data (HoldMeta), outside handles
	nodeSize   uint64                // the superblock's, for what reads it without mu (MetaRoom, ItemCost)
	superDirty bool                  // the superblock changed even if no tree did
	noQuota    bool                  // the filesystem has no quota tree (status item)
	aborted    atomic.Pointer[error] // set once: the filesystem is aborted (or closed)
	writing    *commitWrite          // the commit whose writes run without mu (commitwrite.go)
	allocErr   error                 // a misuse of the allocator seen by Dirty
	log        logState              // the pending log tree's blocks (treelog.go)

	views views // committed views (view.go)

	statsMu    sync.Mutex
	stats      Stats
	transidPub atomic.Uint64 // transid, readable without mu
	totalPub   atomic.Uint64 // the committed superblock's total_bytes, readable without mu

	timerMu   sync.Mutex // guards timerStop and timerDone
	timerStop chan struct{}
	timerDone chan struct{}
	closed    bool
}

// treeState is one tree of the running transaction: the Tree the write
// path updates, and its ROOT_ITEM.
type treeState struct {
	t         *ctree.Tree
	hasItem   bool // all but the root and chunk trees
	key       ondisk.Key
	item      item.RootItem
	itemDirty bool // root item must be rewritten even if the root did not move
}

// Stats reports what the transactions did.
type Stats struct {
	Commits int
	// LastCommit is the last commit's duration: from the start of
	// running delayed refs to the second flush after the superblocks.
	LastCommit  time.Duration
	MaxCommit   time.Duration
	TotalCommit time.Duration
	// LastLocked and MaxLocked are the part of a commit that held the
	// transaction lock (settling and freezing; not the writes and flushes).
	LastLocked, MaxLocked time.Duration
	// LastSettle, LastWrite and LastSuper split LastCommit: running delayed
	// refs and writing root and block group items; writing the tree blocks
	// and the first flush; writing the superblocks and the second flush.
	LastSettle, LastWrite, LastSuper time.Duration
	LastRefHeads                     int // delayed ref heads run by the last commit
	LastBlocks                       int // tree blocks written by the last commit
	LastLoops                        int // passes of the commit loop
}

// Open prepares fi for writing: it refuses read-only and unsupported
// images, loads the block groups and their free space, and invalidates a v1
// space cache. It refuses an image with a log tree to replay (OpenWith
// replays it). mirrors open_ctree (the writable part)
func Open(fi *fsinfo.FSInfo) (*Engine, error) { return OpenWith(fi, OpenOptions{}) }

// OpenWith is Open with options: o.ReplayLog replays a pending log tree.
func OpenWith(fi *fsinfo.FSInfo, o OpenOptions) (*Engine, error) {
	if fi.ReadOnly {
		return nil, errors.New("txn: filesystem was opened read-only")
	}
	sb := fi.Super
	if u := sb.CompatROFlags &^ ondisk.CompatROSupported; u != 0 {
		return nil, fmt.Errorf("txn: cannot write: unsupported compat_ro feature(s) %s (flags %#x)",
			strings.Join(ondisk.CompatROFlagNames(u), ", "), u)
	}
	if u := sb.IncompatFlags &^ ondisk.IncompatSupported; u != 0 {
		return nil, fmt.Errorf("txn: cannot write: unsupported incompat feature(s) %s (flags %#x)",
			strings.Join(ondisk.IncompatFlagNames(u), ", "), u)
	}
	if sb.IncompatFlags&ondisk.IncompatRaid56 != 0 {
		return nil, fmt.Errorf("txn: cannot write: RAID5/6 block groups are not supported for writing")
	}
	if want, have := sb.DevItem.TotalBytes, fi.Dev.Size(); have >= 0 && uint64(have) < want {
		return nil, fmt.Errorf("txn: cannot write: the image is %d bytes but the filesystem's device is %d (superblock dev_item.total_bytes): truncated copy? restore its full size or open it read-only", have, want)
	}
	fst := sb.CompatROFlags&ondisk.CompatROFreeSpaceTree != 0
	if fst && sb.CompatROFlags&ondisk.CompatROFreeSpaceTreeValid == 0 {
		return nil, errors.New("txn: cannot write: free space tree is not marked valid (FREE_SPACE_TREE_VALID); let Linux rebuild it")
	}
	cp := *sb
	f := &Engine{
		Info: fi, transid: sb.Generation + 1, super: &cp, fsid: sb.MetadataFSID(),
		bgTree: fi.BlockGroupTreeID(), fst: fst, skinny: sb.IncompatFlags&ondisk.IncompatSkinnyMetadata != 0,
		mixed: sb.IncompatFlags&ondisk.IncompatMixedGroups != 0,
		refs:  &delayedref.Queue{}, trees: map[ondisk.ObjectID]*treeState{},
		dirty:   map[ondisk.LogicalAddr]*diskio.Node{},
		newData: map[ondisk.LogicalAddr]uint64{},
	}
	f.nodeSize = uint64(sb.NodeSize)
	f.transidPub.Store(uint64(f.transid))
	f.totalPub.Store(sb.TotalBytes)
	if err := f.loadChunkTreeUUID(); err != nil {
		return nil, err
	}
	if err := f.loadGroups(); err != nil {
		return nil, err
	}
	f.ext = &extent.Manager{
		Groups: f.groups, Refs: f.refs, NodeSize: sb.NodeSize, SectorSize: sb.SectorSize, Csum: fi.Csum,
		Skinny: f.skinny, FreeSpaceTree: fst, FirstKey: f.firstKey, Freed: f.extentFreed,
	}
	if !fst && sb.CacheGeneration != 0 && sb.CacheGeneration != ^uint64(0) {
		// A v1 space cache describes free space we are about to change
		// without updating it: make every cache inode's generation mismatch.
		// mirrors the clear_cache mount option
		f.super.CacheGeneration = ^uint64(0)
		f.superDirty = true
	}
	if sb.LogRoot != 0 {
		if o.ReplayLog == nil {
			return nil, fmt.Errorf("txn: %w", ErrLogTree)
		}
		if err := o.ReplayLog(f); err != nil {
			return nil, fmt.Errorf("txn: replay log tree: %w", err)
		}
	}
	return f, nil
}

// loadChunkTreeUUID reads the chunk tree uuid from the chunk root's header.
func (f *Engine) loadChunkTreeUUID() error {
	ct := f.Info.ChunkTree()
	p, _, err := ct.Search(ondisk.Key{})
	if err != nil {
		return fmt.Errorf("txn: read chunk root: %w", err)
	}
	n := p.Nodes[ct.Level]
	if n == nil {
		return fmt.Errorf("txn: read chunk root: %w", diskio.Corruptf("no root node"))
	}
	f.ctUUID = n.Header().ChunkTreeUUID
	return nil
}

func (f *Engine) loadGroups() error {
	cfg := blockgroup.LoadConfig{Super: f.super, Chunks: f.Info.Chunks}
	var err error
	if cfg.BlockGroupTree, err = f.Info.Tree(f.bgTree); err != nil {
		return fmt.Errorf("txn: block group tree: %w", err)
	}
	if cfg.ExtentTree, err = f.Info.Tree(ondisk.ExtentTreeObjectID); err != nil {
		return fmt.Errorf("txn: extent tree: %w", err)
	}
	if cfg.DevTree, err = f.Info.Tree(ondisk.DevTreeObjectID); err != nil {
		return fmt.Errorf("txn: dev tree: %w", err)
	}
	if f.fst {
		if cfg.FreeSpaceTree, err = f.Info.Tree(ondisk.FreeSpaceTreeObjectID); err != nil {
			return fmt.Errorf("txn: free space tree: %w", err)
		}
	}
	if f.groups, err = blockgroup.Load(cfg); err != nil {
		return fmt.Errorf("txn: %w", err)
	}
	return nil
}

// tree returns the running transaction's state of tree id, loading it.
func (f *Engine) tree(id ondisk.ObjectID) (*treeState, error) {
	if ts := f.trees[id]; ts != nil {
		return ts, nil
	}
	ts := &treeState{}
	switch id {
	case ondisk.RootTreeObjectID:
		ts.t = f.Info.RootTree
	case ondisk.ChunkTreeObjectID:
		ts.t = f.Info.ChunkTree()
	case ondisk.TreeLogObjectID:
		return nil, fmt.Errorf("tree %s: log trees are not writable here: %w", ondisk.TreeName(id), fs.ErrInvalid)
	default:
		ri, key, err := f.Info.RootItem(id)
		if err != nil {
			return nil, err
		}
		if ri.Refs == 0 && extent.Shareable(id) && id != ondisk.FSTreeObjectID && ri.Flags&item.RootSubvolDead != 0 {
			return nil, fmt.Errorf("tree %d is being deleted: %w", id, fs.ErrNotExist)
		}
		ts.hasItem, ts.key, ts.item = true, key, ri
		ts.t = &ctree.Tree{R: f.Info.R, ID: id, Root: ri.Bytenr, Level: int(ri.Level), Gen: ri.Generation}
	}
	f.trees[id] = ts
	return ts, nil
}

// root describes tree id for reference updates.
func (f *Engine) root(id ondisk.ObjectID) extent.Root {
	r := extent.Root{ID: id, Shareable: extent.Shareable(id)}
	if ts := f.trees[id]; ts != nil && ts.hasItem {
		r.LastSnapshot = ondisk.Generation(ts.item.LastSnapshot)
	}
	return r
}

// firstKey gives the extent layer the first key of a block of this transaction.
func (f *Engine) firstKey(addr ondisk.LogicalAddr) (ondisk.Key, bool) {
	n := f.dirty[addr]
	if n == nil || n.NumItems() == 0 {
		return ondisk.Key{}, false
	}
	return n.Key(0), true
}

// extentFreed forgets a freed tree block: it is not written, and no cached
// copy outlives it.
func (f *Engine) extentFreed(addr ondisk.LogicalAddr, n uint64, isData bool) {
	if isData {
		return
	}
	delete(f.dirty, addr)
	f.Info.R.Invalidate(addr)
}

// Transid is the running transaction's generation. It does not wait for a
// handle (use Handle.Transid inside one).
func (f *Engine) Transid() ondisk.Generation { return ondisk.Generation(f.transidPub.Load()) }

// TotalBytes is the committed superblock's total_bytes. Unlike Super it
// does not wait for a running commit (statfs and every buffered write's
// space check ask for it).
func (f *Engine) TotalBytes() uint64 { return f.totalPub.Load() }

// Stats returns commit statistics.
func (f *Engine) Stats() Stats {
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	return f.stats
}

// Groups exposes the block groups (for tests and space reporting).
func (f *Engine) Groups() *blockgroup.Manager { return f.groups }

// Super returns a copy of the superblock the next commit writes. It waits
// for the current handle: never call it while holding one.
func (f *Engine) Super() ondisk.Superblock {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.super
}

// Close commits, stops the commit timer and refuses further use. It does
// not close the device.
func (f *Engine) Close() error {
	f.StopCommitTimer()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	err := f.commitLocked()
	if werr := f.waitWriting(); err == nil {
		err = werr
	}
	f.closed = true
	if err == nil {
		f.aborted.CompareAndSwap(nil, &errClosed)
	}
	return err
}

// errClosed is the error of every call after Close; it matches
// fs.ErrClosed (errors.Is), as the library's callers test it.
var errClosed error = closedError{}

type closedError struct{}

func (closedError) Error() string        { return "txn: filesystem is closed" }
func (closedError) Is(target error) bool { return target == fs.ErrClosed }

// abort stops all further writing after a failure in the middle of changes
// that cannot be undone in memory. The disk keeps the last committed
// generation. mirrors btrfs_abort_transaction
func (f *Engine) abort(err error) error { return f.abortAt(f.transid, err) }

// abortAt is abort of transaction transid (a commit writing without f.mu).
func (f *Engine) abortAt(transid ondisk.Generation, err error) error {
	e := fmt.Errorf("txn: transaction %d aborted: %w", transid, err)
	f.aborted.CompareAndSwap(nil, &e)
	return *f.aborted.Load()
}

// Aborted returns the error that aborted the filesystem, if any.
func (f *Engine) Aborted() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitWriting()
	return f.abortErr()
}

// abortErr is the abort error, nil when none or closed.
func (f *Engine) abortErr() error {
	p := f.aborted.Load()
	if p == nil || *p == errClosed {
		return nil
	}
	return *p
}
