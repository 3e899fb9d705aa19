package treelog

import (
	"fmt"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Item is one item of a log tree (data copied out of the block).
type Item struct {
	Key  ondisk.Key
	Data []byte
}

// Log is one subvolume's log tree, read whole.
type Log struct {
	Subvol ondisk.ObjectID // the subvolume the log belongs to
	Root   item.RootItem   // its ROOT_ITEM in the log root tree
	Items  []Item          // every item, in key order
}

// Logs is everything the log root tree of an image describes.
type Logs struct {
	Subvols []*Log
	// Blocks are the addresses of every log tree block (the log root
	// tree's and each log tree's).
	Blocks []ondisk.LogicalAddr
	seen   map[ondisk.LogicalAddr]bool // Blocks, as a set
}

// maxLogItems bounds what one replay loads into memory (hostile images).
const maxLogItems = 1 << 22

// Read reads the log root tree of fi and every log tree it points to. It
// returns nil Logs when the superblock has no log root.
func Read(fi *fsinfo.FSInfo) (*Logs, error) {
	sb := fi.Super
	if sb.LogRoot == 0 {
		return nil, nil
	}
	rt := &ctree.Tree{R: fi.R, ID: ondisk.TreeLogObjectID, Root: sb.LogRoot, Level: int(sb.LogRootLevel)}
	ls := &Logs{seen: map[ondisk.LogicalAddr]bool{}}
	var roots []Item
	if err := walk(rt, ls, &roots); err != nil {
		return nil, fmt.Errorf("log root tree at %d: %w", uint64(sb.LogRoot), err)
	}
	for _, it := range roots {
		if it.Key.ObjectID != ondisk.TreeLogObjectID || it.Key.Type != ondisk.RootItemKey {
			continue
		}
		ri, err := item.DecodeRootItem(it.Data)
		if err != nil {
			return nil, fmt.Errorf("log root tree: root item %v: %w", it.Key, corrupt(err))
		}
		l := &Log{Subvol: ondisk.ObjectID(it.Key.Offset), Root: ri}
		if l.Subvol != ondisk.FSTreeObjectID && (l.Subvol < ondisk.FirstFreeObjectID || l.Subvol > ondisk.LastFreeObjectID) {
			return nil, fmt.Errorf("log root tree: root item %v: %w", it.Key, corrupt(fmt.Errorf("tree %d is not a subvolume", l.Subvol)))
		}
		t := &ctree.Tree{R: fi.R, ID: ondisk.TreeLogObjectID, Root: ri.Bytenr, Level: int(ri.Level), Gen: ri.Generation}
		if err := walk(t, ls, &l.Items); err != nil {
			return nil, fmt.Errorf("log tree of subvolume %d at %d: %w", l.Subvol, uint64(ri.Bytenr), err)
		}
		ls.Subvols = append(ls.Subvols, l)
	}
	return ls, nil
}

// walk collects t's block addresses into ls and its items into items.
func walk(t *ctree.Tree, ls *Logs, items *[]Item) error {
	seen := map[ondisk.LogicalAddr]bool{}
	return t.Walk(func(n *diskio.Node, err error) error {
		if err != nil {
			return err
		}
		if seen[n.Addr] {
			return diskio.Corruptf("block %d reached twice", uint64(n.Addr))
		}
		seen[n.Addr] = true
		// A block in two log trees (our writer before it used each
		// block once) is listed once: it is pinned and freed once.
		if !ls.seen[n.Addr] {
			ls.seen[n.Addr] = true
			ls.Blocks = append(ls.Blocks, n.Addr)
		}
		if !n.IsLeaf() {
			return nil
		}
		if len(*items)+n.NumItems() > maxLogItems {
			return diskio.Corruptf("more than %d items", maxLogItems)
		}
		for i := 0; i < n.NumItems(); i++ {
			*items = append(*items, Item{Key: n.Key(i), Data: append([]byte(nil), n.ItemData(i)...)})
		}
		return nil
	})
}

// find returns the log item with exactly key.
func (l *Log) find(key ondisk.Key) ([]byte, bool) {
	i := sort.Search(len(l.Items), func(i int) bool { return l.Items[i].Key.Compare(key) >= 0 })
	if i < len(l.Items) && l.Items[i].Key == key {
		return l.Items[i].Data, true
	}
	return nil, false
}

// between returns the log items with min <= key <= max.
func (l *Log) between(min, max ondisk.Key) []Item {
	i := sort.Search(len(l.Items), func(i int) bool { return l.Items[i].Key.Compare(min) >= 0 })
	j := i
	for j < len(l.Items) && l.Items[j].Key.Compare(max) <= 0 {
		j++
	}
	return l.Items[i:j]
}

// corrupt marks a decoding error of log data as corruption.
func corrupt(err error) error {
	return fmt.Errorf("%w: %w", diskio.ErrCorrupt, err)
}
