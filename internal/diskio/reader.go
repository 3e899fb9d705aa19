package diskio

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// Expect is what the caller knows about a block before reading it (from the
// parent's key pointer); zero values mean unknown, Level -1 means unknown.
// ReadNode checks a block against it on every read, from disk or from the
// cache (expect.go): a pointer to the node itself or to an ancestor fails.
type Expect struct {
	Tree       ondisk.ObjectID
	Level      int
	Generation ondisk.Generation
	FirstKey   *ondisk.Key
}

// Reader reads tree blocks and data through the chunk map, from the devices
// of Devs. Copies on a missing device are skipped; a read whose every copy
// is on a missing device fails with a *volume.MissingDeviceError.
type Reader struct {
	Devs       *volume.DeviceSet
	Chunks     *volume.ChunkMap
	NodeSize   uint32
	SectorSize uint32
	Csum       csum.Type
	FSID       ondisk.UUID // metadata fsid written in block headers
	// SeedFSIDs are the fsids of seed filesystems this one was sprouted
	// from: blocks written before the sprout carry theirs.
	SeedFSIDs []ondisk.UUID
	// Warn receives notices such as a DUP fallback; nil discards them.
	Warn func(msg string)
	// SynthItems skips the tree-checker's item rules (treecheck_items.go),
	// for unit tests of tree mechanics that store made-up item data; the
	// structural checks still run. Readers of images never set it.
	SynthItems bool

	mu       sync.Mutex
	held     map[ondisk.LogicalAddr]*Node // being written (held.go)
	cache    map[ondisk.LogicalAddr]*list.Element
	lru      *list.List
	maxCache int
}

// NewReader makes a reader of a single-device filesystem (dev is the
// superblock's devid; devid 1 when the superblock has none, as made-up
// superblocks of tests) with a block cache of cacheBytes.
func NewReader(dev blockdev.Device, sb *ondisk.Superblock, chunks *volume.ChunkMap, cacheBytes int) *Reader {
	id := sb.DevItem.DevID
	if id == 0 {
		id = 1
	}
	return NewSetReader(volume.Single(dev, id), sb, chunks, cacheBytes)
}

// NewSetReader makes a reader over the devices of devs with a block cache of cacheBytes.
func NewSetReader(devs *volume.DeviceSet, sb *ondisk.Superblock, chunks *volume.ChunkMap, cacheBytes int) *Reader {
	r := &Reader{
		Devs: devs, Chunks: chunks, NodeSize: sb.NodeSize, SectorSize: sb.SectorSize,
		Csum: csum.Type(sb.CsumType), FSID: sb.MetadataFSID(),
		cache: map[ondisk.LogicalAddr]*list.Element{}, lru: list.New(),
	}
	r.maxCache = max(cacheBytes/int(sb.NodeSize), 16)
	return r
}

func (r *Reader) warn(format string, args ...any) {
	if r.Warn != nil {
		r.Warn(fmt.Sprintf(format, args...))
	}
}

// Cached returns a cached node without I/O.
func (r *Reader) Cached(addr ondisk.LogicalAddr) *Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.held[addr]; n != nil {
		return n
	}
	if e, ok := r.cache[addr]; ok {
		r.lru.MoveToFront(e)
		return e.Value.(*Node)
	}
	return nil
}

// Put caches a node (writers call it for blocks they wrote).
func (r *Reader) Put(n *Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.put(n)
}

func (r *Reader) put(n *Node) {
	if e, ok := r.cache[n.Addr]; ok {
		e.Value = n
		r.lru.MoveToFront(e)
		return
	}
	r.cache[n.Addr] = r.lru.PushFront(n)
	for r.lru.Len() > r.maxCache {
		old := r.lru.Back()
		r.lru.Remove(old)
		delete(r.cache, old.Value.(*Node).Addr)
	}
}

// Invalidate drops addr from the cache.
func (r *Reader) Invalidate(addr ondisk.LogicalAddr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.cache[addr]; ok {
		r.lru.Remove(e)
		delete(r.cache, addr)
	}
}

// ReadNode reads, checksums and validates the tree block at addr. With DUP or
// mirrored metadata it tries each copy and warns when it had to fall back.
func (r *Reader) ReadNode(addr ondisk.LogicalAddr, exp Expect) (*Node, error) {
	if n := r.Cached(addr); n != nil {
		if exp.Generation != 0 && n.Generation() != exp.Generation {
			r.Invalidate(addr) // rewritten since it was cached: read it again
		} else if err := checkExpect(n, exp); err != nil {
			// the cache holds the block as it is on disk: this parent is wrong
			return nil, &BlockError{Op: "read node", Tree: exp.Tree, Addr: addr, Err: err}
		} else {
			return n, nil
		}
	}
	n, err := r.readNodeUncached(addr, exp)
	if err != nil {
		return nil, &BlockError{Op: "read node", Tree: exp.Tree, Addr: addr, Err: err}
	}
	r.Put(n)
	return n, nil
}

func (r *Reader) readNodeUncached(addr ondisk.LogicalAddr, exp Expect) (*Node, error) {
	if addr == 0 || uint64(addr)%uint64(r.SectorSize) != 0 {
		return nil, corruptf("address not aligned to sectorsize %d", r.SectorSize)
	}
	copies, n, err := r.mapPresent(addr, uint64(r.NodeSize))
	if err != nil {
		return nil, err
	}
	if n < uint64(r.NodeSize) {
		return nil, corruptf("block crosses a chunk or stripe boundary")
	}
	var firstErr error
	for i, c := range copies {
		buf := make([]byte, r.NodeSize)
		node := &Node{Addr: addr, Data: buf}
		err := r.readCopy(buf, c)
		if err == nil && !r.Csum.VerifyBlock(buf) {
			err = corruptf("%s checksum mismatch (copy %d at physical %d)", r.Csum, i+1, c.Physical)
		}
		if err == nil {
			err = checkNode(node, r.FSID, exp, r.SeedFSIDs...)
		}
		if err == nil && !r.SynthItems {
			err = r.itemRules().checkItems(node) // treecheck_items.go
		}
		if err == nil {
			if i > 0 {
				r.warn("read node %d (tree %s): copy 1 bad (%v); using copy %d", addr,
					ondisk.TreeName(exp.Tree), firstErr, i+1)
			}
			return node, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, firstErr
}

// mapPresent maps [logical, logical+length) as Chunks.Map does and keeps
// the copies on present devices (a degraded RAID1 reads from the others).
func (r *Reader) mapPresent(logical ondisk.LogicalAddr, length uint64) ([]volume.Copy, uint64, error) {
	copies, n, err := r.Chunks.Map(logical, length)
	if err != nil {
		return nil, 0, err
	}
	copies, err = r.Devs.Present(copies)
	if err != nil {
		return nil, 0, fmt.Errorf("map %d: %w", logical, err)
	}
	return copies, n, nil
}

func (r *Reader) readCopy(buf []byte, c volume.Copy) error {
	if len(c.Rebuild) > 0 {
		return r.rebuild(buf, c)
	}
	dev, err := r.Devs.Device(c.DevID)
	if err != nil {
		return err
	}
	if int64(c.Physical)+int64(len(buf)) > dev.Size() {
		return fmt.Errorf("physical %d+%d beyond the end %d of devid %d", c.Physical, len(buf), dev.Size(), c.DevID)
	}
	if _, err := dev.ReadAt(buf, int64(c.Physical)); err != nil {
		return fmt.Errorf("read devid %d physical %d: %w", c.DevID, c.Physical, err)
	}
	return nil
}

// rebuild reads a RAID5/6 data stripe's range as the XOR of the other
// stripes of its row (data and P).
func (r *Reader) rebuild(buf []byte, c volume.Copy) error {
	clear(buf)
	tmp := make([]byte, len(buf))
	for _, src := range c.Rebuild {
		if err := r.readCopy(tmp, src); err != nil {
			return fmt.Errorf("rebuild devid %d physical %d from parity: %w", c.DevID, c.Physical, err)
		}
		for i := range buf {
			buf[i] ^= tmp[i]
		}
	}
	return nil
}

// NumCopies returns how many copies of logical are on present devices.
func (r *Reader) NumCopies(logical ondisk.LogicalAddr) int {
	copies, _, err := r.mapPresent(logical, 1)
	if err != nil {
		return 0
	}
	return len(copies)
}

// ReadLogical reads len(buf) bytes at logical from copy `mirror` (0-based),
// crossing chunk and stripe boundaries as needed.
func (r *Reader) ReadLogical(buf []byte, logical ondisk.LogicalAddr, mirror int) error {
	for len(buf) > 0 {
		copies, n, err := r.mapPresent(logical, uint64(len(buf)))
		if err != nil {
			return err // "map LOGICAL: ..."
		}
		if n == 0 {
			return fmt.Errorf("read logical %d: empty mapping", logical)
		}
		c := copies[0]
		if mirror < len(copies) {
			c = copies[mirror]
		}
		if err := r.readCopy(buf[:n], c); err != nil {
			return fmt.Errorf("read logical %d: %w", logical, err)
		}
		buf = buf[n:]
		logical += ondisk.LogicalAddr(n)
	}
	return nil
}
