package fileread

import (
	"sync"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/datacsum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// maxWarnKeys bounds the notices remembered for de-duplication; past it
// new notices are dropped (a long-lived mount over a badly damaged image
// must not grow without bound).
const maxWarnKeys = 4096

// Options configure an Engine.
type Options struct {
	// Cache keeps recently verified sectors and inflated compressed
	// extents, keyed by logical address. Only for images no one writes
	// while they are open.
	Cache bool
	// Warn receives notices (copy fallback, missing checksums, sectors no
	// copy holds intact), each once; nil discards them.
	Warn func(msg string)
}

// Engine reads file extents through a tree block reader's chunk map.
type Engine struct {
	r      *diskio.Reader
	ss     uint64
	csum   csum.Type
	warnFn func(string)

	warnMu sync.Mutex
	warned map[string]bool

	sectors *sectorCache // nil without Options.Cache
	decomp  *decompCache // nil without Options.Cache
}

// New makes an engine reading through r (its chunk map, sector size and
// checksum type).
func New(r *diskio.Reader, o Options) *Engine {
	e := &Engine{r: r, ss: uint64(r.SectorSize), csum: r.Csum, warnFn: o.Warn, warned: map[string]bool{}}
	if o.Cache {
		e.sectors = newSectorCache()
		e.decomp = newDecompCache(decompCacheEntries)
	}
	return e
}

// Inode says whose data is read: for error messages, and whether it is
// verified at all.
type Inode struct {
	ondisk.InodeRef
	NoDataSum bool // inode flag NODATASUM: the kernel does not verify its data
}

// Extent is what a read needs of a regular file extent item.
type Extent struct {
	Start        uint64 // file offset of the item (its key offset)
	DiskBytenr   ondisk.LogicalAddr
	DiskNumBytes uint64
	Offset       uint64 // offset into the (inflated) disk extent of Start
	RAMBytes     uint64
	Compression  uint8
}

// Read fills p with the file bytes at file offset off held by the regular
// extent e (off and off+len(p) inside it). sums is the csum tree to check
// against; nil reads without verification (each copy tried on I/O errors).
func (en *Engine) Read(in Inode, sums *datacsum.Tree, e *Extent, p []byte, off uint64) error {
	if in.NoDataSum {
		sums = nil
	}
	if e.Compression != 0 {
		return en.readCompressed(in, sums, e, p, off)
	}
	return en.readPlain(in, sums, e, p, off)
}

// warn reports msg once per key.
func (en *Engine) warn(key, msg string) {
	en.warnMu.Lock()
	drop := en.warned[key] || len(en.warned) >= maxWarnKeys
	if !drop {
		en.warned[key] = true
	}
	en.warnMu.Unlock()
	if !drop && en.warnFn != nil {
		en.warnFn(msg)
	}
}
