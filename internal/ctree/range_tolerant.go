package ctree

import (
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// RangeTolerant is Range for readers of damaged images: a block below the
// root that cannot be read (checksum, tree-checker, or a pointer its parent
// contradicts) is passed to onErr and its keys are skipped; the walk goes
// on with the next key pointer. A directory with one malformed item then
// loses that leaf, not every entry after it. Only a root that cannot be
// read is returned as the error. Every step down checks the child's level
// against its parent's (ReadChild), so the walk ends.
func (t *Tree) RangeTolerant(min, max ondisk.Key, fn func(k ondisk.Key, data []byte) bool, onErr func(error)) error {
	root, err := t.readRoot()
	if err != nil {
		return err
	}
	t.rangeNode(root, min, max, fn, onErr)
	return nil
}

// rangeNode visits the items of n's subtree in [min, max]; false once fn
// said stop or max was passed.
func (t *Tree) rangeNode(n *diskio.Node, min, max ondisk.Key, fn func(ondisk.Key, []byte) bool, onErr func(error)) bool {
	nr := n.NumItems()
	slot, exact := binSearch(n, min)
	if n.IsLeaf() {
		for i := slot; i < nr; i++ {
			k := n.Key(i)
			if k.Compare(max) > 0 || !fn(k, n.ItemData(i)) {
				return false
			}
		}
		return true
	}
	if !exact && slot > 0 {
		slot--
	}
	for i := slot; i < nr; i++ {
		if i > slot && n.Key(i).Compare(max) > 0 {
			return false
		}
		c, err := t.ReadChild(n, i)
		if err != nil {
			if onErr != nil {
				onErr(err)
			}
			continue
		}
		if !t.rangeNode(c, min, max, fn, onErr) {
			return false
		}
	}
	return true
}
