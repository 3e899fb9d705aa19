package ctree

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// searchMode says what a write search prepares the leaf for.
type searchMode int

const (
	modeCOW    searchMode = iota // only COW the path
	modeInsert                   // room for a new item of n data bytes (stops early if the key exists)
	modeExtend                   // room for n more bytes in the existing item at key
	modeAuto                     // SearchForWrite with insLen > 0: extend if the key exists, else insert
	modeDelete                   // merge/balance underfull nodes on the way down
)

// SearchForWrite COWs every block on the path to key (mirrors btrfs_search_slot with cow=1). insLen > 0 makes
// sure the leaf has room for an item of insLen data bytes plus its header (splitting as needed); insLen < 0
// means a deletion is coming (merge/balance underfull nodes on the way down, like the kernel). The path's leaf
// slot is at key if found, else the insert position.
//
// When insLen > 0 and key exists, the leaf has room to extend that item by insLen bytes. When insLen > 0
// and key does not exist, the caller must insert key at the returned position (as the kernel requires):
// the leaf may be a new empty one made for it.
func (t *Tree) SearchForWrite(a Allocator, key ondisk.Key, insLen int) (*Path, bool, error) {
	mode := modeCOW
	switch {
	case insLen > 0:
		mode = modeAuto
	case insLen < 0:
		mode, insLen = modeDelete, 0
	}
	p, found, err := t.searchSlot(a, key, mode, insLen)
	if err != nil {
		return nil, false, t.opError("search for write", key, err)
	}
	return p, found, nil
}

// maxRestarts bounds the restarts of a deletion search after root shrinks.
const maxRestarts = 2 * ondisk.MaxLevel

// searchSlot is the write search: COW on the way down, split full nodes
// (insert/extend modes) or balance underfull ones (delete mode), then make
// room in the leaf. insData is the item data size (insert) or the growth
// (extend). mirrors btrfs_search_slot
func (t *Tree) searchSlot(a Allocator, key ondisk.Key, mode searchMode, insData int) (*Path, bool, error) {
	grow := mode == modeInsert || mode == modeExtend || mode == modeAuto
	for restart := 0; restart < maxRestarts; restart++ {
		p := &Path{tree: t}
		n, err := t.readRoot()
		if err != nil {
			return nil, false, err
		}
		if n, err = t.cowBlock(a, n, nil, 0); err != nil {
			return nil, false, err
		}
		restartNeeded := false
		for !restartNeeded {
			lvl := n.Level()
			p.Nodes[lvl] = n
			slot, exact := binSearch(n, key)
			if lvl == 0 {
				p.Slots[0] = slot
				if err := t.prepareLeaf(a, p, key, mode, insData, exact); err != nil {
					return nil, false, err
				}
				return p, exact, nil
			}
			if !exact && slot > 0 {
				slot--
			}
			p.Slots[lvl] = slot
			switch {
			case grow && numItems(n) >= maxPtrs(n)-3:
				if err := t.splitNode(a, p, lvl); err != nil {
					return nil, false, err
				}
			case mode == modeDelete && numItems(n) < maxPtrs(n)/2:
				if err := t.balanceLevel(a, p, lvl); err != nil {
					return nil, false, err
				}
				if p.Nodes[lvl] == nil { // the root was shrunk: start over
					restartNeeded = true
					continue
				}
			}
			if n, err = t.readChildForWrite(a, p.Nodes[lvl], p.Slots[lvl]); err != nil {
				return nil, false, err
			}
		}
	}
	return nil, false, fmt.Errorf("too many restarts: %w", errInternal)
}

// prepareLeaf makes the room the search mode asks for in the path's leaf.
func (t *Tree) prepareLeaf(a Allocator, p *Path, key ondisk.Key, mode searchMode, insData int, exact bool) error {
	leaf := p.Nodes[0]
	need, extend := 0, false
	switch mode {
	case modeInsert:
		if exact {
			return nil
		}
		need = insData + itemSz
	case modeExtend:
		if !exact {
			return nil
		}
		need, extend = insData, true
	case modeAuto:
		if exact {
			need, extend = insData, true
		} else {
			need = insData + itemSz
		}
	}
	if need <= 0 || leafFree(leaf) >= need {
		return nil
	}
	if need > leafDataSize(leaf) || extend && need+itemSize(leaf, p.Slots[0])+itemSz > leafDataSize(leaf) {
		return fmt.Errorf("room for %d bytes: %w", insData, ErrTooLarge)
	}
	if err := t.splitLeaf(a, p, key, need, extend); err != nil {
		return err
	}
	if leafFree(p.Nodes[0]) < need {
		return fmt.Errorf("split leaf left %d bytes, need %d: %w",
			leafFree(p.Nodes[0]), need, errInternal)
	}
	return nil
}

// readChildForWrite reads the child at slot of a writable node and COWs it.
func (t *Tree) readChildForWrite(a Allocator, parent *diskio.Node, slot int) (*diskio.Node, error) {
	c, err := t.ReadChild(parent, slot)
	if err != nil {
		return nil, err
	}
	return t.cowBlock(a, c, parent, slot)
}
