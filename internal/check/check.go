package check

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// Options select optional checks.
type Options struct {
	// CheckDataCsum reads every checksummed data sector and verifies it
	// against its checksum, trying every copy (btrfs check --check-data-csum).
	CheckDataCsum bool
	// SuperMirror opens superblock copy N-1 when N > 0 (Image only).
	SuperMirror int
	// CacheBytes bounds the block cache (default 256 MiB).
	CacheBytes int
}

// Image checks the filesystem in the image file at path. The error is
// non-nil only when the image cannot be opened at all (no valid
// superblock, unreadable chunk tree); every inconsistency found once it is
// open is a Problem in the report.
func Image(path string) (*Report, error) { return ImageWith(path, Options{}) }

// ImageWith is Image with options.
func ImageWith(path string, o Options) (*Report, error) { return ImagesWith([]string{path}, o) }

// ImagesWith checks the filesystem on the devices at paths (every device
// of a multi-device filesystem, in any order). A device that is missing is
// a warning, as for btrfs check; what cannot be read without it is a
// problem.
func ImagesWith(paths []string, o Options) (*Report, error) {
	var devs []blockdev.Device
	var files []*blockdev.File
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for _, p := range paths {
		dev, err := blockdev.OpenFile(p, true)
		if err != nil {
			return nil, fmt.Errorf("check %s: %w", p, err)
		}
		devs = append(devs, dev)
		files = append(files, dev)
	}
	rep, err := devices(devs, paths, o)
	if rep != nil {
		var busy []string
		for i, dev := range files {
			if h, ok := dev.InUse(); ok {
				busy = append(busy, blockdev.InUseWarning(paths[i], h))
			}
		}
		rep.InUse = strings.Join(busy, "; ")
	}
	return rep, err
}

// FS checks the filesystem on fi's devices as it is on disk: it opens the
// devices afresh (read-only, with its own block cache) so that nothing
// cached in fi hides what was written.
func FS(fi *fsinfo.FSInfo) (*Report, error) { return FSWith(fi, Options{}) }

// FSWith is FS with options.
func FSWith(fi *fsinfo.FSInfo, o Options) (*Report, error) {
	if fi.Devices == nil {
		return devices([]blockdev.Device{fi.Dev}, nil, o)
	}
	var devs []blockdev.Device
	var names []string
	for _, m := range fi.Devices.Members() {
		devs = append(devs, m.Dev)
		names = append(names, m.Name)
	}
	return devices(devs, names, o)
}

// Device checks the filesystem on dev, read afresh with its own block
// cache (as FS does for fi.Dev).
func Device(dev blockdev.Device, o Options) (*Report, error) { return device(dev, o) }

// device checks the single-device filesystem on dev.
func device(dev blockdev.Device, o Options) (*Report, error) {
	return devices([]blockdev.Device{dev}, nil, o)
}

func devices(devs []blockdev.Device, names []string, o Options) (*Report, error) {
	if o.CacheBytes == 0 {
		o.CacheBytes = 256 << 20
	}
	fi, err := fsinfo.OpenDevices(devs, fsinfo.Options{ReadOnly: true, SuperMirror: o.SuperMirror, CacheBytes: o.CacheBytes,
		DeviceNames: names})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	if err := readableWithoutMissing(fi); err != nil {
		return nil, err
	}
	c := newChecker(fi, o)
	c.run()
	return c.rep, nil
}

// readableWithoutMissing fails, as btrfs check fails to open the
// filesystem, when a device is missing and the root node of the root tree
// or of a global tree is only on it: nothing below can be checked, and
// every later error would only repeat that the device is missing.
func readableWithoutMissing(fi *fsinfo.FSInfo) error {
	if !fi.Degraded() {
		return nil
	}
	sb := fi.Super
	_, err := fi.R.ReadNode(sb.Root, diskio.Expect{Tree: ondisk.RootTreeObjectID, Level: int(sb.RootLevel), Generation: sb.Generation})
	if errors.Is(err, volume.ErrMissingDevice) {
		return fmt.Errorf("check: cannot read the root tree: %w", err)
	}
	for _, id := range []ondisk.ObjectID{ondisk.ExtentTreeObjectID, ondisk.DevTreeObjectID, ondisk.FSTreeObjectID,
		ondisk.CsumTreeObjectID, ondisk.QuotaTreeObjectID, ondisk.UUIDTreeObjectID, ondisk.FreeSpaceTreeObjectID,
		ondisk.BlockGroupTreeObjectID, ondisk.DataRelocTreeObjectID} {
		ri, _, err := fi.RootItem(id)
		if err != nil {
			continue // the tree checks report what is wrong with it
		}
		_, err = fi.R.ReadNode(ri.Bytenr, diskio.Expect{Tree: id, Level: int(ri.Level), Generation: ri.Generation})
		if errors.Is(err, volume.ErrMissingDevice) {
			return fmt.Errorf("check: cannot read the %s tree: %w", ondisk.TreeName(id), err)
		}
	}
	return nil
}

// checker holds what the passes collect; the final cross-checks compare it.
type checker struct {
	fi         *fsinfo.FSInfo
	sb         *ondisk.Superblock
	r          *diskio.Reader
	opt        Options
	rep        *Report
	nodesize   uint64
	sectorsize uint64
	csumSize   int

	roots       []*rootInfo                          // trees found in the root tree, in key order
	blocks      map[ondisk.LogicalAddr]blockInfo     // every tree block reached, once
	bad         map[ondisk.LogicalAddr]bool          // blocks that could not be read
	ext         extentTable                          // extent items, by start
	refs        refState                             // references found, until the extent items are known
	bgs         []blockGroup                         // block group items, by start
	chunks      []chunkRec                           // chunk items, by logical start
	devs        []devItemRec                         // dev items of the chunk tree
	dexts       []devExtentRec                       // dev extents, by (devid, physical)
	csums       rangeList                            // byte ranges covered by checksum items, merged
	csumItems   []csumItem                           // every checksum item, in key order
	fst         *freeSpaceState                      // free space tree records per block group
	qg          *qgroupState                         // quota tree items and the extents each subvolume reaches
	spaceCache  spaceCacheState                      // v1 free space cache inodes and headers of the root tree
	logs        logState                             // what the log trees reference
	subvol      subvolState                          // ROOT_REF / ROOT_BACKREF / subvolume dir entries
	logged      map[ondisk.LogicalAddr]bool          // blocks of log trees (not in the extent tree)
	rootOf      map[ondisk.ObjectID]*rootInfo        // by tree id (first ROOT_ITEM)
	orphanRoots map[ondisk.ObjectID]bool             // ORPHAN_ITEMs of the root tree: subvolumes being deleted
	curTree     ondisk.ObjectID                      // the tree being walked, for the reader's notices
	unverified  map[volume.MissingDeviceError]uint64 // data bytes whose only copy is on a missing device
}

func newChecker(fi *fsinfo.FSInfo, o Options) *checker {
	sb := fi.Super
	c := &checker{
		fi: fi, sb: sb, r: fi.R, opt: o, rep: &Report{},
		nodesize: uint64(sb.NodeSize), sectorsize: uint64(sb.SectorSize), csumSize: fi.Csum.Size(),
		blocks:      map[ondisk.LogicalAddr]blockInfo{},
		bad:         map[ondisk.LogicalAddr]bool{},
		logged:      map[ondisk.LogicalAddr]bool{},
		rootOf:      map[ondisk.ObjectID]*rootInfo{},
		orphanRoots: map[ondisk.ObjectID]bool{},
	}
	c.subvol.init()
	// A bad copy of a mirrored block is damage even though the other copy
	// serves the read: the reader's fallback notice becomes a problem.
	fi.R.Warn = c.copyProblem
	return c
}

// copyProblem turns the reader's "read node N (tree T): copy 1 bad ...;
// using copy 2" notice into a problem of the tree being walked.
func (c *checker) copyProblem(msg string) {
	p := Problem{Class: ClassTree, Tree: c.curTree, Msg: msg}
	var addr uint64
	if _, err := fmt.Sscanf(msg, "read node %d", &addr); err == nil {
		p.Block = ondisk.LogicalAddr(addr)
		if i := strings.Index(msg, ": "); i >= 0 {
			p.Msg = msg[i+2:]
		}
	}
	c.rep.add(p)
}

// run is the whole check, in the order the passes depend on each other.
func (c *checker) run() {
	// 1. The superblock on its own: sizes, generations, backup roots.
	c.checkSuper()
	// 2. The extent tree first, so that every reference found later can be
	//    matched against its extent item (and the FULL_BACKREF flag of a
	//    block is known before its references are counted).
	c.walkExtentTree()
	c.refs.ready = true
	c.applyDeferredRefs()
	// 3. The root tree (every other tree's ROOT_ITEM) and the chunk tree.
	c.walkRootTree()
	c.walkChunkTree()
	// 4. The global trees, then the subvolume trees with their inodes.
	c.walkGlobalTrees()
	c.walkFSTrees()
	c.walkLogTrees()
	// 5. Cross-checks of what the walks collected.
	c.checkExtentRefs()
	c.checkBlockGroups()
	c.checkChunks()
	c.checkFreeSpace()
	c.checkCsumsAgainstExtents()
	c.checkSubvolRefs()
	c.checkQgroups()
	c.checkSpaceCache()
	c.checkBackupRoots()
	c.reportUnverified()
	for _, w := range c.fi.Warnings() { // from opening, before the checker took over
		if strings.HasPrefix(w, "read node ") {
			c.copyProblem(w)
			continue
		}
		c.rep.warn("%s", w)
	}
}

// problem records an error.
func (c *checker) problem(cl Class, tree ondisk.ObjectID, block ondisk.LogicalAddr, key *ondisk.Key, format string, args ...any) {
	c.rep.add(Problem{Class: cl, Tree: tree, Block: block, Key: key, Msg: fmt.Sprintf(format, args...)})
}
