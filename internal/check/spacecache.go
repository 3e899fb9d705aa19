package check

import (
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// The v1 free space cache (space_cache=v1) keeps one inode per block
// group in the root tree: a FREE_SPACE header (key FREE_SPACE_OBJECTID,
// 0, block group start) points to the INODE_ITEM of a regular file whose
// data holds the cache. btrfs check requires mode 0100600 of those inodes
// (mirrors check_repair_free_space_inode); the header must point to an
// inode that exists. Headers of block groups that no longer exist and
// inodes no header points to are left for the kernel to clean: warnings.

// freeSpaceCacheMode is the mode of every v1 cache inode (S_IFREG | 0600).
const freeSpaceCacheMode = sIFREG | 0o600

type spaceCacheInode struct {
	key  ondisk.Key
	leaf ondisk.LogicalAddr
	mode uint32
}

type spaceCacheHeader struct {
	key      ondisk.Key
	leaf     ondisk.LogicalAddr
	location ondisk.Key
}

type spaceCacheState struct {
	inodes  map[ondisk.ObjectID]spaceCacheInode
	headers []spaceCacheHeader
}

// isCacheIno reports whether a root tree inode number can be a cache inode.
func isCacheIno(id ondisk.ObjectID) bool {
	return id >= ondisk.FirstFreeObjectID && id <= ondisk.LastFreeObjectID
}

// spaceCacheItem reads a root tree item that belongs to the v1 cache:
// an INODE_ITEM of a cache inode or a FREE_SPACE header.
func (c *checker) spaceCacheItem(n *diskio.Node, k ondisk.Key, d []byte) {
	s := &c.spaceCache
	bad := func(format string, args ...any) {
		c.problem(ClassSpaceCache, ondisk.RootTreeObjectID, n.Addr, keyp(k), format, args...)
	}
	switch {
	case k.Type == ondisk.InodeItemKey && isCacheIno(k.ObjectID):
		if len(d) < item.InodeItemSize {
			bad("inode item of %d bytes, need %d", len(d), item.InodeItemSize)
			return
		}
		if s.inodes == nil {
			s.inodes = map[ondisk.ObjectID]spaceCacheInode{}
		}
		mode := le.Uint32(d[52:])
		s.inodes[k.ObjectID] = spaceCacheInode{key: k, leaf: n.Addr, mode: mode}
		if mode != freeSpaceCacheMode {
			bad("free space cache inode %d has mode %#o, expected %#o", k.ObjectID, mode, freeSpaceCacheMode)
		}
	case k.ObjectID == ondisk.FreeSpaceObjectID:
		if k.Type != 0 {
			bad("unexpected %s item with objectid FREE_SPACE", k.Type)
			return
		}
		h, err := item.DecodeFreeSpaceHeader(d)
		if err != nil {
			bad("free space cache header: %v", err)
			return
		}
		if h.Location.Type != ondisk.InodeItemKey || h.Location.Offset != 0 || !isCacheIno(h.Location.ObjectID) {
			bad("free space cache header for %d points to %v, not an inode", k.Offset, h.Location)
			return
		}
		s.headers = append(s.headers, spaceCacheHeader{key: k, leaf: n.Addr, location: h.Location})
	}
}

// checkSpaceCache matches the v1 cache headers with their inodes and
// block groups.
func (c *checker) checkSpaceCache() {
	s := &c.spaceCache
	used := map[ondisk.ObjectID]bool{}
	for _, h := range s.headers {
		ino := h.location.ObjectID
		if _, ok := s.inodes[ino]; !ok {
			c.problem(ClassSpaceCache, ondisk.RootTreeObjectID, h.leaf, keyp(h.key),
				"free space cache header for block group %d points to inode %d, which does not exist", h.key.Offset, ino)
		}
		if used[ino] {
			c.problem(ClassSpaceCache, ondisk.RootTreeObjectID, h.leaf, keyp(h.key),
				"free space cache inode %d is the cache of two block groups", ino)
		}
		used[ino] = true
		if i := c.findBG(h.key.Offset); i < 0 || c.bgs[i].start != h.key.Offset {
			c.rep.warn("root tree %v: free space cache header for %d, which is not a block group (left for the kernel to remove)", h.key, h.key.Offset)
		}
	}
	var orphans []ondisk.ObjectID
	for ino := range s.inodes {
		if !used[ino] {
			orphans = append(orphans, ino)
		}
	}
	sort.Slice(orphans, func(i, j int) bool { return orphans[i] < orphans[j] })
	for _, ino := range orphans {
		c.rep.warn("root tree: free space cache inode %d has no FREE_SPACE header pointing to it", ino)
	}
}
