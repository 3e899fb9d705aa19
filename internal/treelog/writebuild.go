package treelog

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// wRef is one item of the log being built.
type wRef struct {
	key  ondisk.Key
	data []byte
	ver  uint64 // its store's version (0: none, see itemName)
}

// build lays the stores out as one log tree per subvolume and the log root
// tree over them. Blocks whose content a block of the log on disk already
// has are that block (w.reused); the others are newly allocated. It
// returns the new blocks, and the log root tree's root and level; the
// leaves of each log tree are in w.built until the log is on disk (then
// they become w.leaves, see writeleaves.go).
func (w *Writer) build(h *txn.Handle) (nodes []*diskio.Node, root ondisk.LogicalAddr, level int, err error) {
	w.nodes, w.reused = w.nodes[:0], w.reused[:0]
	if w.reusedSet == nil {
		w.reusedSet = map[ondisk.LogicalAddr]bool{}
	}
	clear(w.reusedSet)
	w.built = map[ondisk.ObjectID][]builtLeaf{}
	var roots []wRef
	for i := 0; i < len(w.logged); {
		j := i
		for j < len(w.logged) && w.logged[j].Root == w.logged[i].Root {
			j++
		}
		w.gather(w.logged[i:j])
		sub := w.logged[i].Root
		r, lvl, leaves, err := w.buildTree(h, w.order, w.leaves[sub])
		if err != nil {
			return w.nodes, 0, 0, err
		}
		w.built[sub] = leaves
		ri := item.RootItem{
			Inode:      item.InodeItem{Generation: 1, Size: 3, NLink: 1, NBytes: uint64(w.nodesize), Mode: item.SIFDIR | 0o755},
			Generation: h.Transid(), GenerationV2: h.Transid(), Bytenr: r, Level: uint8(lvl), V2: true,
		}
		roots = append(roots, wRef{ondisk.Key{ObjectID: ondisk.TreeLogObjectID, Type: ondisk.RootItemKey,
			Offset: uint64(w.logged[i].Root)}, ri.Bytes(), 0})
		i = j
	}
	root, level, _, err = w.buildTree(h, roots, nil)
	return w.nodes, root, level, err
}

// gather puts the items of the given inodes (one subvolume, in inode
// order) into w.order: each inode's items, then all checksum items in
// address order without overlaps (an extent shared by two logged inodes).
func (w *Writer) gather(ids []ondisk.InodeRef) {
	w.order = w.order[:0]
	for _, id := range ids {
		l := w.stores[id]
		for _, it := range l.items {
			w.order = append(w.order, wRef{it.key, l.data(it), l.ver})
		}
	}
	first := len(w.order)
	for _, id := range ids {
		l := w.stores[id]
		for _, it := range l.csums {
			w.order = append(w.order, wRef{it.key, l.data(it), l.ver})
		}
	}
	cs := w.order[first:]
	byKey := func(a, b wRef) int { return a.key.Compare(b.key) }
	if !slices.IsSortedFunc(cs, byKey) { // each store's are; files written in turn are too
		slices.SortStableFunc(cs, byKey)
	}
	out := cs[:0]
	var prevEnd uint64
	for _, r := range cs {
		start := r.key.Offset
		if start < prevEnd {
			skip := (prevEnd - start) / w.ss * uint64(w.csumSize)
			if skip >= uint64(len(r.data)) {
				continue
			}
			r.data = r.data[skip:]
			r.key.Offset = prevEnd
		}
		prevEnd = r.key.Offset + uint64(len(r.data)/w.csumSize)*w.ss
		out = append(out, r)
	}
	w.order = w.order[:first+len(out)]
}

// newNode takes a block buffer from the pool; seal gives it its address.
func (w *Writer) newNode() *diskio.Node {
	var n *diskio.Node
	if k := len(w.nodes); k < cap(w.nodes) && w.nodes[:k+1][k] != nil {
		n = w.nodes[:k+1][k]
		clear(n.Data)
	} else {
		n = &diskio.Node{Data: make([]byte, w.nodesize)}
	}
	n.Addr = 0
	w.nodes = append(w.nodes, n)
	return n
}

// seal gives the block just filled (the last of w.nodes) its address: a
// block of the log on disk with the same content is used again (it is not
// written, and w.nodes gives the buffer back), else a new log block.
// Unchanged parts of the log thus cost nothing on the next fsync.
func (w *Writer) seal(h *txn.Handle, n *diskio.Node, level int) error {
	n.Data[0x64] = uint8(level) // the content compared starts at nritems, level

	if addr, ok := w.disk.find(n.Data, w.reusedSet); ok {
		n.Addr = addr
		w.reused = append(w.reused, addr)
		w.reusedSet[addr] = true
		w.nodes = w.nodes[:len(w.nodes)-1]
		return nil
	}
	addr, err := h.AllocLogBlock()
	if err != nil {
		w.nodes = w.nodes[:len(w.nodes)-1]
		return err
	}
	n.Addr = addr
	h.InitLogBlock(n.Data, addr, level)
	return nil
}

// buildTree packs items (in key order) into leaves and the leaves under
// nodes; it returns the root, its level and the leaves. Where a leaf of
// old (the tree's leaves on disk) holds exactly the items from some point
// on, it is taken as it is (writeleaves.go).
func (w *Writer) buildTree(h *txn.Handle, items []wRef, old []builtLeaf) (ondisk.LogicalAddr, int, []builtLeaf, error) {
	type child struct {
		key  ondisk.Key
		addr ondisk.LogicalAddr
	}
	var level []child
	var leaves []builtLeaf
	idx := leafIndex{old: old}
	dataSize := w.nodesize - ondisk.HeaderSize
	for i := 0; i < len(items) || len(level) == 0; {
		if i < len(items) {
			if l, ok := idx.match(items, i, w.reusedSet); ok {
				w.reused = append(w.reused, l.addr)
				w.reusedSet[l.addr] = true
				level = append(level, child{items[i].key, l.addr})
				leaves = append(leaves, l)
				i += len(l.items)
				continue
			}
		}
		n := w.newNode()
		end, nr, first := dataSize, 0, i
		for ; i < len(items); i++ {
			it := items[i]
			if len(it.data)+ondisk.ItemHeaderSize > end-nr*ondisk.ItemHeaderSize {
				if nr == 0 {
					return 0, 0, nil, fmt.Errorf("log item %v of %d bytes does not fit in a leaf", it.key, len(it.data))
				}
				break
			}
			if nr > 0 {
				if _, ok := idx.match(items, i, w.reusedSet); ok {
					break // an old leaf goes on from here
				}
			}
			end -= len(it.data)
			copy(n.Data[ondisk.HeaderSize+end:], it.data)
			ondisk.ItemHeader{Key: it.key, Offset: uint32(end), Size: uint32(len(it.data))}.Encode(n.Data, nr)
			nr++
		}
		binary.LittleEndian.PutUint32(n.Data[0x60:], uint32(nr))
		if err := w.seal(h, n, 0); err != nil {
			return 0, 0, nil, err
		}
		var k ondisk.Key
		if nr > 0 {
			k = n.Key(0)
			l := builtLeaf{addr: n.Addr, items: itemNames(items[first:i])}
			if i < len(items) {
				l.next = itemName{items[i].ver, items[i].key, len(items[i].data)}
			}
			leaves = append(leaves, l)
		}
		level = append(level, child{k, n.Addr})
	}
	maxPtrs := diskio.MaxKeyPtrs(uint32(w.nodesize))
	for lvl := 1; len(level) > 1; lvl++ {
		var up []child
		for i := 0; i < len(level); i += maxPtrs {
			kids := level[i:min(i+maxPtrs, len(level))]
			n := w.newNode()
			for j, c := range kids {
				ondisk.KeyPtr{Key: c.key, BlockPtr: c.addr, Generation: h.Transid()}.Encode(n.Data, j)
			}
			binary.LittleEndian.PutUint32(n.Data[0x60:], uint32(len(kids)))
			if err := w.seal(h, n, lvl); err != nil {
				return 0, 0, nil, err
			}
			up = append(up, child{kids[0].key, n.Addr})
		}
		level = up
		if len(level) == 1 {
			return level[0].addr, lvl, leaves, nil
		}
	}
	return level[0].addr, 0, leaves, nil
}
