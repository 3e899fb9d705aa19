// Package fsinfo opens a btrfs filesystem: superblock, chunk tree, root tree
// and the global trees (the kernel's open_ctree and btrfs_fs_info).
package fsinfo

import (
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// ErrNoTree is returned when a tree's root item does not exist; it
// satisfies errors.Is(err, fs.ErrNotExist).
var ErrNoTree = fmt.Errorf("tree not found: %w", fs.ErrNotExist)

// Options control how a filesystem is opened.
type Options struct {
	ReadOnly bool
	// SuperMirror forces superblock copy N-1 when N > 0 (1 = primary); 0 picks
	// the primary and falls back to a mirror when it is bad.
	SuperMirror int
	// CacheBytes bounds the tree block cache (default 64 MiB).
	CacheBytes int
	// Warn receives notices (mirror fallback, DUP fallback); nil collects them only.
	Warn func(string)
	// DeviceNames name the devices given to OpenDevices in messages (their
	// paths), in the same order; missing names read "device N".
	DeviceNames []string
}

// FSInfo is an open filesystem's global state.
type FSInfo struct {
	// Dev is the device whose superblock is in use (for a single-device
	// filesystem, the device); Devices holds every device, present or missing.
	Dev      blockdev.Device
	Devices  *volume.DeviceSet
	Super    *ondisk.Superblock
	Chunks   *volume.ChunkMap
	R        *diskio.Reader
	RootTree *ctree.Tree
	ReadOnly bool
	Csum     csum.Type

	warnMu   sync.Mutex
	warnings []string
	warnFn   func(string)
}

func (f *FSInfo) warn(msg string) {
	f.warnMu.Lock()
	f.warnings = append(f.warnings, msg)
	fn := f.warnFn
	f.warnMu.Unlock()
	if fn != nil {
		fn(msg)
	}
}

// Warnings returns the notices collected so far.
func (f *FSInfo) Warnings() []string {
	f.warnMu.Lock()
	defer f.warnMu.Unlock()
	return append([]string(nil), f.warnings...)
}

// Open reads the superblock and chunk tree of dev and sets up the root tree.
func Open(dev blockdev.Device, opts Options) (*FSInfo, error) {
	return OpenDevices([]blockdev.Device{dev}, opts)
}

// OpenDevices opens the filesystem on devs, its devices in any order (the
// kernel's btrfs_scan_one_device + open_ctree): every device's superblock
// must carry the same fsid, each device is matched to its DEV_ITEM in the
// chunk tree by devid and uuid, and devices the chunk tree names that are
// not given are missing: a warning names each, and reads use the other
// copies (a degraded RAID1 reads in full). Writing is refused unless the
// filesystem has one device.
func OpenDevices(devs []blockdev.Device, opts Options) (*FSInfo, error) {
	if len(devs) == 0 {
		return nil, fmt.Errorf("open: no device given")
	}
	f := &FSInfo{ReadOnly: opts.ReadOnly, warnFn: opts.Warn}
	set, latest, err := f.assemble(devs, opts)
	if err != nil {
		return nil, err
	}
	sb := latest.Super
	f.Dev, f.Devices, f.Super = latest.Dev, set, sb
	f.Csum = csum.Type(sb.CsumType)
	if err := f.checkFeatures(); err != nil {
		return nil, err
	}
	f.Chunks = &volume.ChunkMap{}
	sys, err := sb.SysChunks()
	if err != nil {
		return nil, fmt.Errorf("open: superblock: %w", err)
	}
	for _, c := range sys {
		if err := f.Chunks.Insert(ondisk.LogicalAddr(c.Key.Offset), c.Chunk); err != nil {
			return nil, fmt.Errorf("open: sys_chunk_array: %w", err)
		}
	}
	cache := opts.CacheBytes
	if cache == 0 {
		cache = 64 << 20
	}
	f.R = diskio.NewSetReader(set, sb, f.Chunks, cache)
	f.R.Warn = f.warn
	f.R.SeedFSIDs = seedFSIDs(set) // blocks from before a sprout, the chunk tree's among them
	if err := f.loadChunkTree(); err != nil {
		if n := len(set.Members()); uint64(n) < sb.NumDevices {
			return nil, fmt.Errorf("%w (%d of the filesystem's %d devices given)", err, n, sb.NumDevices)
		}
		return nil, err
	}
	if err := f.matchDevItems(); err != nil {
		return nil, err
	}
	f.RootTree = &ctree.Tree{R: f.R, ID: ondisk.RootTreeObjectID, Root: sb.Root,
		Level: int(sb.RootLevel), Gen: sb.Generation}
	return f, nil
}

// checkFeatures refuses unknown incompat flags and forces read-only for
// unknown compat_ro flags.
func (f *FSInfo) checkFeatures() error {
	sb := f.Super
	if u := sb.IncompatFlags &^ ondisk.IncompatSupported; u != 0 {
		return fmt.Errorf("open: unsupported incompat feature(s) %s (flags %#x)",
			strings.Join(ondisk.IncompatFlagNames(u), ", "), u)
	}
	if u := sb.CompatROFlags &^ ondisk.CompatROSupported; u != 0 {
		if !f.ReadOnly {
			return fmt.Errorf("open: unsupported compat_ro feature(s) %s (flags %#x): can only open read-only",
				strings.Join(ondisk.CompatROFlagNames(u), ", "), u)
		}
	}
	if !f.ReadOnly && sb.NumDevices != 1 {
		return fmt.Errorf("open: filesystem has %d devices: writing a multi-device filesystem is not supported; open it read-only", sb.NumDevices)
	}
	return nil
}

// loadChunkTree reads every CHUNK_ITEM into the chunk map. mirrors btrfs_read_chunk_tree
func (f *FSInfo) loadChunkTree() error {
	t := f.ChunkTree()
	min := ondisk.Key{ObjectID: ondisk.FirstChunkTreeObjectID, Type: ondisk.ChunkItemKey}
	max := ondisk.Key{ObjectID: ondisk.FirstChunkTreeObjectID, Type: ondisk.ChunkItemKey, Offset: ^uint64(0)}
	var derr error
	err := t.Range(min, max, func(k ondisk.Key, data []byte) bool {
		c, err := ondisk.DecodeChunk(data)
		if err == nil {
			err = f.Chunks.Insert(ondisk.LogicalAddr(k.Offset), c)
		}
		if err != nil {
			derr = fmt.Errorf("open: chunk tree item %v: %w", k, err)
			return false
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("open: chunk tree: %w", err)
	}
	return derr
}

// ChunkTree returns the chunk tree.
func (f *FSInfo) ChunkTree() *ctree.Tree {
	return &ctree.Tree{R: f.R, ID: ondisk.ChunkTreeObjectID, Root: f.Super.ChunkRoot,
		Level: int(f.Super.ChunkRootLevel), Gen: f.Super.ChunkRootGeneration}
}

// RootItem looks up the newest ROOT_ITEM of tree id in the root tree.
func (f *FSInfo) RootItem(id ondisk.ObjectID) (item.RootItem, ondisk.Key, error) {
	p, ok, err := f.RootTree.SearchBackward(ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey, Offset: ^uint64(0)})
	if err != nil {
		return item.RootItem{}, ondisk.Key{}, err
	}
	if !ok || p.Key().ObjectID != id || p.Key().Type != ondisk.RootItemKey {
		return item.RootItem{}, ondisk.Key{}, fmt.Errorf("tree %s: %w", ondisk.TreeName(id), ErrNoTree)
	}
	ri, err := item.DecodeRootItem(p.Data())
	if err != nil {
		return ri, p.Key(), fmt.Errorf("root item %v: %w", p.Key(), err)
	}
	return ri, p.Key(), nil
}

// Tree opens tree id: the root, chunk and log trees come from the superblock,
// every other from its ROOT_ITEM.
func (f *FSInfo) Tree(id ondisk.ObjectID) (*ctree.Tree, error) {
	switch id {
	case ondisk.RootTreeObjectID:
		return f.RootTree, nil
	case ondisk.ChunkTreeObjectID:
		return f.ChunkTree(), nil
	case ondisk.TreeLogObjectID:
		if f.Super.LogRoot == 0 {
			return nil, fmt.Errorf("log tree: %w", ErrNoTree)
		}
		return &ctree.Tree{R: f.R, ID: ondisk.TreeLogObjectID, Root: f.Super.LogRoot,
			Level: int(f.Super.LogRootLevel)}, nil
	}
	ri, _, err := f.RootItem(id)
	if err != nil {
		return nil, err
	}
	return &ctree.Tree{R: f.R, ID: id, Root: ri.Bytenr, Level: int(ri.Level), Gen: ri.Generation}, nil
}

// BlockGroupTreeID is where block group items live: the block-group tree when
// that feature is on, the extent tree otherwise.
func (f *FSInfo) BlockGroupTreeID() ondisk.ObjectID {
	if f.Super.CompatROFlags&ondisk.CompatROBlockGroupTree != 0 {
		return ondisk.BlockGroupTreeObjectID
	}
	return ondisk.ExtentTreeObjectID
}
