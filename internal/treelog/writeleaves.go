package treelog

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// Leaves of the log on disk are used again without being copied or
// hashed when they would hold exactly the same items: an item is named by
// the version of the store it comes from (every copy of an inode into its
// store gets a new version), its key and its size, which together decide
// its bytes. The build keeps, for each leaf of the log it wrote, the names
// of its items; the next build, packing leaves in key order, takes an old
// leaf whole wherever the items from there on are the ones it holds, and
// closes the leaf being filled early to do so (leaves after a changed
// inode thus stay where they are instead of shifting). So an fsync costs
// the leaves of the inodes it changed, not the whole log: the kernel gets
// the same by changing its log trees in place (COW within the
// transaction). mirrors btrfs_log_inode's per-item updates of the log tree

// itemName names the bytes of one log item (see above); ver 0 means the
// item has no store version and is never matched.
type itemName struct {
	ver  uint64
	key  ondisk.Key
	size int
}

// builtLeaf is a leaf of the log on disk, the items it holds and the item
// that followed it (ver 0: none). A leaf is taken again only when the same
// item follows it: else its end would move (a leaf at the end of the log
// fills up as new inodes are logged, instead of each getting a leaf).
type builtLeaf struct {
	addr  ondisk.LogicalAddr
	items []itemName
	next  itemName
}

// leafIndex finds old leaves that start at a given item of the log being
// built; items are visited in key order, so a cursor suffices.
type leafIndex struct {
	old []builtLeaf
	k   int
}

// match returns the old leaf that holds exactly items[i:i+n] as its items,
// if one starts at items[i] and used does not hold it.
func (x *leafIndex) match(items []wRef, i int, used map[ondisk.LogicalAddr]bool) (builtLeaf, bool) {
	key := items[i].key
	for x.k < len(x.old) && x.old[x.k].items[0].key.Compare(key) < 0 {
		x.k++
	}
	if x.k == len(x.old) {
		return builtLeaf{}, false
	}
	l := x.old[x.k]
	if l.items[0].key != key || i+len(l.items) > len(items) || used[l.addr] {
		return builtLeaf{}, false
	}
	var next itemName
	if e := i + len(l.items); e < len(items) {
		next = itemName{items[e].ver, items[e].key, len(items[e].data)}
		if next.ver == 0 {
			return builtLeaf{}, false
		}
	}
	if next != l.next {
		return builtLeaf{}, false
	}
	for j, n := range l.items {
		it := items[i+j]
		if it.ver == 0 || it.ver != n.ver || it.key != n.key || len(it.data) != n.size {
			return builtLeaf{}, false
		}
	}
	return l, true
}

// itemNames returns the names of items (a new leaf's), in a slice of its own.
func itemNames(items []wRef) []itemName {
	out := make([]itemName, len(items))
	for i, it := range items {
		out[i] = itemName{it.ver, it.key, len(it.data)}
	}
	return out
}
