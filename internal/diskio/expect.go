package diskio

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// A block is only as trustworthy as the parent that points at it: its level
// must be one below the parent's, its generation the one in the key pointer,
// its owner the tree being walked and its first key the pointer's key. The
// tree-checker (checkNode) checks this on every read from disk; a block
// served from the cache was checked against the parent that first read it,
// which may not be the parent asking now. A key pointer aimed at its own node
// (or at an ancestor) finds that node in the cache: only checking the level
// against *this* parent stops a walk from descending into it for ever
// (levels strictly decrease, so every descent ends within MaxLevel steps).

// checkExpect checks a block against what its parent says of it.
// mirrors btrfs_verify_level_key + verify_parent_transid
func checkExpect(n *Node, exp Expect) error {
	lvl := n.Level()
	if lvl >= ondisk.MaxLevel {
		return corruptf("invalid level %d", lvl)
	}
	if exp.Level >= 0 && lvl != exp.Level {
		return corruptf("level %d, expected %d", lvl, exp.Level)
	}
	if exp.Generation != 0 && n.Generation() != exp.Generation {
		return corruptf("parent transid verify failed: wanted %d found %d", exp.Generation, n.Generation())
	}
	if !ownerMatches(n.Owner(), exp.Tree) {
		return corruptf("owner %s, expected %s", ondisk.TreeName(n.Owner()), ondisk.TreeName(exp.Tree))
	}
	if exp.FirstKey != nil && n.NumItems() > 0 {
		if k := n.Key(0); k != *exp.FirstKey {
			return corruptf("first key %v, parent says %v", k, *exp.FirstKey)
		}
	}
	return nil
}

// ownerMatches reports whether a block owned by owner may belong to tree.
// Subvolumes, the data reloc tree and log trees share blocks (snapshots,
// relocation), so only the fixed global trees are checked.
func ownerMatches(owner, tree ondisk.ObjectID) bool {
	if tree == 0 || tree >= ondisk.FirstFreeObjectID || tree == ondisk.FSTreeObjectID ||
		tree == ondisk.TreeLogObjectID {
		return true
	}
	return owner == tree || owner == ondisk.TreeRelocObjectID
}
