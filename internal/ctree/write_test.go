package ctree_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand"
	"slices"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ctree/ctreetest"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var (
	seedFlag = flag.Int64("seed", 0, "seed for the random write-path tests (0: time-based)")
	opsFlag  = flag.Int("ops", 0, "operations per random write-path test (0: default)")
)

const testTree = ondisk.FSTreeObjectID

var nodeSizes = []uint32{4096, 16384, 65536}

// harness runs operations on a tree and on a map model side by side.
type harness struct {
	t     testing.TB
	a     *ctreetest.Alloc
	tr    *ctree.Tree
	m     map[ondisk.Key][]byte
	keys  []ondisk.Key       // the model's keys, unordered, for random picks
	idx   map[ondisk.Key]int // position in keys
	rnd   *rand.Rand
	max   int // max item size
	seq   uint64
	ops   int
	fill  byte
	stats map[string]int
}

func newHarness(t testing.TB, nodesize uint32, seed int64) *harness {
	a := ctreetest.New(nodesize)
	tr, err := ctree.NewEmptyTree(a, testTree)
	if err != nil {
		t.Fatal(err)
	}
	tr.R = a.Reader
	return &harness{t: t, a: a, tr: tr, m: map[ondisk.Key][]byte{}, idx: map[ondisk.Key]int{}, rnd: rand.New(rand.NewSource(seed)),
		max: ctree.MaxItemSize(nodesize), stats: map[string]int{}}
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("op %d (nodesize %d, tree level %d, %d items): %s", h.ops, h.a.NodeSize, h.tr.Level, len(h.m),
		fmt.Sprintf(format, args...))
}

func (h *harness) data(n int) []byte {
	h.fill++
	b := make([]byte, n)
	for i := range b {
		b[i] = h.fill + byte(i*7)
	}
	return b
}

// size picks an item size: mostly small, sometimes large or (near) maximal.
func (h *harness) size() int {
	switch r := h.rnd.Intn(100); {
	case r < 50:
		return h.rnd.Intn(40)
	case r < 75:
		return h.rnd.Intn(h.max / 8)
	case r < 90:
		return h.max/3 + h.rnd.Intn(h.max-h.max/3+1)
	default:
		return h.max - h.rnd.Intn(min(64, h.max))
	}
}

// newKey returns a random key (dense space, so collisions happen) or the
// next of a sequential run.
func (h *harness) newKey() ondisk.Key {
	if h.rnd.Intn(3) == 0 {
		h.seq++
		return ondisk.Key{ObjectID: 1 << 40, Type: ondisk.ItemType(h.seq % 3 * 12), Offset: h.seq}
	}
	types := []ondisk.ItemType{1, 12, 84, 96, 108}
	return ondisk.Key{ObjectID: ondisk.ObjectID(256 + h.rnd.Intn(400)), Type: types[h.rnd.Intn(len(types))],
		Offset: uint64(h.rnd.Intn(50))}
}

// someKey returns a key of the model (or a new key if the model is empty).
func (h *harness) someKey() (ondisk.Key, bool) {
	if len(h.m) == 0 {
		return h.newKey(), false
	}
	return h.keys[h.rnd.Intn(len(h.keys))], true
}

func (h *harness) set(k ondisk.Key, d []byte) {
	if _, ok := h.m[k]; !ok {
		h.idx[k] = len(h.keys)
		h.keys = append(h.keys, k)
	}
	h.m[k] = d
}

func (h *harness) del(k ondisk.Key) {
	i, ok := h.idx[k]
	if !ok {
		return
	}
	last := h.keys[len(h.keys)-1]
	h.keys[i] = last
	h.idx[last] = i
	h.keys = h.keys[:len(h.keys)-1]
	delete(h.idx, k)
	delete(h.m, k)
}

func (h *harness) sortedKeys() []ondisk.Key {
	keys := make([]ondisk.Key, 0, len(h.m))
	for k := range h.m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, ondisk.Key.Compare)
	return keys
}

func (h *harness) step(grow int) {
	h.ops++
	r := h.rnd.Intn(100)
	switch {
	case r < grow:
		h.opInsert()
	case r < grow+5:
		h.opPut()
	case r < grow+10:
		h.opUpdate()
	case r < grow+14:
		h.opExtend()
	case r < grow+18:
		h.opTruncate()
	case r < grow+20:
		h.opEditInPlace()
	case r < grow+22:
		h.opSetKey()
	case r < grow+24:
		h.opDeleteSlots()
	case r < 99:
		h.opDelete()
	default:
		h.opDeleteRange()
	}
}

func (h *harness) opInsert() {
	k := h.newKey()
	d := h.data(h.size())
	var err error
	switch h.rnd.Intn(3) {
	case 0:
		err = h.tr.InsertItem(h.a, k, d)
	case 1:
		if len(d) == 0 { // SearchForWrite cannot ask room for an empty item
			err = h.tr.InsertItem(h.a, k, d)
			break
		}
		var p *ctree.Path
		var found bool
		p, found, err = h.tr.SearchForWrite(h.a, k, len(d))
		if _, exists := h.m[k]; exists && errors.Is(err, ctree.ErrTooLarge) {
			// the key exists, so SearchForWrite made room to extend it by len(d): too much
			err = ctree.ErrExists
		}
		if err == nil && found {
			err = ctree.ErrExists
		}
		if err == nil {
			if free := p.Leaf().LeafFreeSpace(); free < len(d)+ondisk.ItemHeaderSize {
				h.fatalf("SearchForWrite(%v, %d) left only %d bytes free", k, len(d), free)
			}
			err = p.SetupItemForInsert(h.a, k, len(d))
		}
		if err == nil {
			copy(p.Data(), d)
			p.MarkDirty(h.a)
		}
	default:
		var p *ctree.Path
		if p, err = h.tr.InsertEmptyItem(h.a, k, len(d)); err == nil {
			if p.Key() != k || len(p.Data()) != len(d) || !allZero(p.Data()) {
				h.fatalf("InsertEmptyItem %v: path at %v with %d bytes", k, p.Key(), len(p.Data()))
			}
			copy(p.Data(), d)
			p.MarkDirty(h.a)
		}
	}
	_, exists := h.m[k]
	switch {
	case exists && !errors.Is(err, ctree.ErrExists):
		h.fatalf("insert of existing %v: err %v, want ErrExists", k, err)
	case !exists && err != nil:
		h.fatalf("insert %v (%d bytes): %v", k, len(d), err)
	case !exists:
		h.set(k, d)
		h.stats["insert"]++
	}
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func (h *harness) opPut() {
	k, _ := h.someKey()
	if h.rnd.Intn(2) == 0 {
		k = h.newKey()
	}
	d := h.data(h.size())
	if err := h.tr.PutItem(h.a, k, d); err != nil {
		h.fatalf("put %v (%d bytes): %v", k, len(d), err)
	}
	h.set(k, d)
	h.stats["put"]++
}

func (h *harness) opUpdate() {
	k, ok := h.someKey()
	if h.rnd.Intn(8) == 0 {
		k, ok = h.newKey(), false
		_, ok = h.m[k]
	}
	d := h.data(h.size())
	err := h.tr.UpdateItem(h.a, k, d)
	if !ok {
		if !errors.Is(err, fs.ErrNotExist) {
			h.fatalf("update of absent %v: err %v, want ErrNotExist", k, err)
		}
		return
	}
	if err != nil {
		h.fatalf("update %v to %d bytes: %v", k, len(d), err)
	}
	h.set(k, d)
	h.stats["update"]++
}

func (h *harness) opExtend() {
	k, ok := h.someKey()
	if !ok {
		return
	}
	old := h.m[k]
	room := h.max - len(old)
	if room <= 0 {
		return
	}
	n := 1 + h.rnd.Intn(room)
	if h.rnd.Intn(2) == 0 {
		n = 1 + h.rnd.Intn(min(room, 64))
	}
	p, found, err := h.tr.SearchForWrite(h.a, k, n)
	if err != nil || !found {
		h.fatalf("search for extend %v by %d: found %v err %v", k, n, found, err)
	}
	if free := p.Leaf().LeafFreeSpace(); free < n {
		h.fatalf("SearchForWrite(%v, %d) left only %d bytes free", k, n, free)
	}
	leaf := p.Leaf()
	if err := p.ExtendItem(h.a, n); err != nil {
		h.fatalf("extend %v by %d: %v", k, n, err)
	}
	if p.Leaf() != leaf || p.Key() != k {
		h.fatalf("extend %v moved the path although the leaf had room", k)
	}
	d := p.Data()
	if len(d) != len(old)+n || !bytes.Equal(d[:len(old)], old) || !allZero(d[len(old):]) {
		h.fatalf("extend %v by %d: data wrong", k, n)
	}
	tail := h.data(n)
	copy(d[len(old):], tail)
	p.MarkDirty(h.a)
	h.set(k, append(append([]byte(nil), old...), tail...))
	h.stats["extend"]++
}

func (h *harness) opTruncate() {
	k, ok := h.someKey()
	if !ok {
		return
	}
	old := h.m[k]
	n := 0
	if len(old) > 0 {
		n = h.rnd.Intn(len(old) + 1)
	}
	fromEnd := h.rnd.Intn(2) == 0
	p, found, err := h.tr.SearchForWrite(h.a, k, 0)
	if err != nil || !found {
		h.fatalf("search for truncate %v: found %v err %v", k, found, err)
	}
	if err := p.TruncateItem(h.a, n, fromEnd); err != nil {
		h.fatalf("truncate %v to %d: %v", k, n, err)
	}
	want := old[:n]
	if !fromEnd {
		want = old[len(old)-n:]
	}
	if !bytes.Equal(p.Data(), want) {
		h.fatalf("truncate %v to %d (fromEnd %v): data wrong", k, n, fromEnd)
	}
	h.set(k, append([]byte(nil), want...))
	h.stats["truncate"]++
}

func (h *harness) opEditInPlace() {
	k, ok := h.someKey()
	if !ok || len(h.m[k]) == 0 {
		return
	}
	p, found, err := h.tr.SearchForWrite(h.a, k, 0)
	if err != nil || !found {
		h.fatalf("search for edit %v: found %v err %v", k, found, err)
	}
	d := p.Data()
	i := h.rnd.Intn(len(d))
	d[i] ^= 0x5a
	p.MarkDirty(h.a)
	h.set(k, append([]byte(nil), d...))
	h.stats["edit"]++
}

// opSetKey moves a key to its immediate successor or predecessor in key
// space, which keeps the order whenever that key is free.
func (h *harness) opSetKey() {
	k, ok := h.someKey()
	if !ok {
		return
	}
	nk := k
	if h.rnd.Intn(2) == 0 && k.Offset < 1<<62 {
		nk.Offset++
	} else if k.Offset > 0 {
		nk.Offset--
	}
	if _, taken := h.m[nk]; taken || nk == k {
		return
	}
	p, found, err := h.tr.SearchForWrite(h.a, k, 0)
	if err != nil || !found {
		h.fatalf("search for set key %v: found %v err %v", k, found, err)
	}
	if err := p.SetItemKey(h.a, nk); err != nil {
		h.fatalf("set key %v to %v: %v", k, nk, err)
	}
	h.set(nk, h.m[k])
	h.del(k)
	h.stats["setkey"]++
}

func (h *harness) opDelete() {
	k, ok := h.someKey()
	if h.rnd.Intn(10) == 0 {
		k = h.newKey()
		_, ok = h.m[k]
	}
	err := h.tr.DeleteItem(h.a, k)
	if !ok {
		if !errors.Is(err, fs.ErrNotExist) {
			h.fatalf("delete of absent %v: err %v, want ErrNotExist", k, err)
		}
		return
	}
	if err != nil {
		h.fatalf("delete %v: %v", k, err)
	}
	h.del(k)
	h.stats["delete"]++
}

// opDeleteSlots deletes a run of consecutive items of one leaf through a path.
func (h *harness) opDeleteSlots() {
	k, ok := h.someKey()
	if !ok {
		return
	}
	p, found, err := h.tr.SearchForWrite(h.a, k, -1)
	if err != nil || !found {
		h.fatalf("search for delete %v: found %v err %v", k, found, err)
	}
	slot := p.Slots[0]
	n := 1 + h.rnd.Intn(p.Leaf().NumItems()-slot)
	var gone []ondisk.Key
	for i := slot; i < slot+n; i++ {
		gone = append(gone, p.Leaf().Key(i))
	}
	if err := p.DeleteSlots(h.a, slot, n); err != nil {
		h.fatalf("delete slots %d+%d at %v: %v", slot, n, k, err)
	}
	for _, g := range gone {
		h.del(g)
	}
	h.stats["delslots"]++
}

func (h *harness) opDeleteRange() {
	lo := h.newKey()
	hi := lo
	hi.ObjectID += ondisk.ObjectID(h.rnd.Intn(4))
	hi.Offset = h.rnd.Uint64()
	if len(h.m) > 0 && h.rnd.Intn(4) != 0 {
		lo, _ = h.someKey()
		keys := h.sortedKeys()
		i, _ := slices.BinarySearchFunc(keys, lo, ondisk.Key.Compare)
		hi = keys[min(len(keys)-1, i+h.rnd.Intn(60))]
	}
	if hi.Less(lo) {
		lo, hi = hi, lo
	}
	h.deleteRange(lo, hi)
}

func (h *harness) deleteRange(lo, hi ondisk.Key) {
	if err := h.tr.DeleteRange(h.a, lo, hi); err != nil {
		h.fatalf("delete range %v..%v: %v", lo, hi, err)
	}
	for k := range h.m {
		if lo.Compare(k) <= 0 && k.Compare(hi) <= 0 {
			h.del(k)
		}
	}
	h.stats["delrange"]++
}

// check verifies the tree's structure and contents against the model, both
// through the live tree and through a snapshot read back by diskio.
func (h *harness) check() {
	h.t.Helper()
	if err := h.a.CheckTree(h.tr); err != nil {
		h.fatalf("%v", err)
	}
	if err := h.a.CheckUnmodified(); err != nil {
		h.fatalf("%v", err)
	}
	st, err := h.a.Snapshot(h.tr)
	if err != nil {
		h.fatalf("%v", err)
	}
	keys := h.sortedKeys()
	for _, tr := range []*ctree.Tree{h.tr, st} {
		i := 0
		err := tr.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, d []byte) bool {
			if i >= len(keys) || keys[i] != k {
				want := "end"
				if i < len(keys) {
					want = keys[i].String()
				}
				h.fatalf("range item %d: key %v, model has %v", i, k, want)
			}
			if !bytes.Equal(d, h.m[k]) {
				h.fatalf("range item %d %v: %d bytes differ from model's %d", i, k, len(d), len(h.m[k]))
			}
			i++
			return true
		})
		if err != nil {
			h.fatalf("range: %v", err)
		}
		if i != len(keys) {
			h.fatalf("range returned %d items, model has %d", i, len(keys))
		}
	}
}

func (h *harness) commit() {
	if err := h.a.Commit(); err != nil {
		h.fatalf("commit: %v", err)
	}
	h.tr.RootChanged = false
	if h.rnd.Intn(2) == 0 {
		h.tr.ForgetBlocks()
	}
	h.stats["commit"]++
}

func testSeed(t *testing.T) int64 { return testutil.Seed(t, *seedFlag) }

// TestRandomOps runs seeded random operation sequences (grow, churn, shrink
// to empty) against a map model for every node size, checking the whole
// tree every few operations.
func TestRandomOps(t *testing.T) {
	seed := testSeed(t)
	for _, ns := range nodeSizes {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			h := newHarness(t, ns, seed)
			ops := *opsFlag
			if ops == 0 {
				ops = map[uint32]int{4096: 20000, 16384: 12000, 65536: 6000}[ns]
				if testing.Short() {
					ops /= 4
				}
			}
			checkEvery := 1 + ops/60
			maxLevel := 0
			phases := []struct {
				name string
				grow int
				n    int
			}{{"grow", 70, ops / 2}, {"churn", 35, ops / 4}, {"shrink", 5, ops / 4}}
			for _, ph := range phases {
				for i := 0; i < ph.n; i++ {
					h.step(ph.grow)
					maxLevel = max(maxLevel, h.tr.Level)
					if h.rnd.Intn(150) == 0 {
						h.commit()
					}
					if h.ops%checkEvery == 0 {
						h.check()
					}
				}
				h.check()
				t.Logf("after %s: %d items, level %d, %d live blocks", ph.name, len(h.m), h.tr.Level, len(h.a.Live()))
			}
			h.deleteRange(ondisk.Key{}, ondisk.MaxKey)
			h.check()
			if h.tr.Level != 0 || len(h.a.Live()) != 1 {
				t.Fatalf("after deleting everything: level %d, %d live blocks; want an empty root leaf",
					h.tr.Level, len(h.a.Live()))
			}
			t.Logf("max level %d; ops %v; allocator %+v", maxLevel, h.stats, h.a.Stats)
		})
	}
}

// TestCOWOldGeneration builds a tree, commits it, and checks that later
// operations COW every block they change: no committed block's bytes
// change, and the path to a changed key is all of the new generation.
func TestCOWOldGeneration(t *testing.T) {
	seed := testSeed(t)
	for _, ns := range nodeSizes {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			h := newHarness(t, ns, seed)
			for len(h.m) < 3000 {
				k := ondisk.Key{ObjectID: ondisk.ObjectID(256 + h.rnd.Intn(100000)), Type: 1}
				if _, ok := h.m[k]; ok {
					continue
				}
				d := h.data(h.rnd.Intn(100))
				if err := h.tr.InsertItem(h.a, k, d); err != nil {
					t.Fatal(err)
				}
				h.set(k, d)
			}
			h.check()
			if err := h.a.Commit(); err != nil {
				t.Fatal(err)
			}
			h.tr.ForgetBlocks()
			h.tr.RootChanged = false
			oldRoot, oldGen := h.tr.Root, h.tr.Gen
			if h.tr.Level == 0 {
				t.Fatalf("tree has a single leaf; want several levels")
			}

			k, _ := h.someKey()
			d := h.data(len(h.m[k])) // same size: no leaf split, only the path is COWed
			if err := h.tr.UpdateItem(h.a, k, d); err != nil {
				t.Fatal(err)
			}
			h.set(k, d)
			if err := h.a.CheckUnmodified(); err != nil {
				t.Fatal(err)
			}
			if !h.tr.RootChanged || h.tr.Root == oldRoot || h.tr.Gen != h.a.Transid() || oldGen == h.tr.Gen {
				t.Fatalf("root not COWed: root %d->%d gen %d->%d changed %v", oldRoot, h.tr.Root, oldGen,
					h.tr.Gen, h.tr.RootChanged)
			}
			p, found, err := h.tr.Search(k)
			if err != nil || !found {
				t.Fatalf("search %v: %v %v", k, found, err)
			}
			for l := 0; l <= h.tr.Level; l++ {
				if g := p.Nodes[l].Generation(); g != h.a.Transid() {
					t.Errorf("level %d block %d on the updated path has generation %d, want %d", l,
						p.Nodes[l].Addr, g, h.a.Transid())
				}
			}
			if s := h.a.Stats; s.Cow != h.tr.Level+1 {
				t.Errorf("update COWed %d blocks, want %d (one per level)", s.Cow, h.tr.Level+1)
			}
			// and many more operations of every kind, across commits
			for i := 0; i < 1500; i++ {
				h.step(40)
				if i%100 == 99 {
					h.check()
				}
				if i%500 == 499 {
					h.commit()
				}
			}
			h.check()
		})
	}
}

// TestSequentialFill inserts sequential keys and checks that leaves end up
// well filled (items pushed left before splitting) and the tree is valid;
// then deletes every other key and all the rest.
func TestSequentialFill(t *testing.T) {
	for _, ns := range nodeSizes {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			h := newHarness(t, ns, 1)
			n := 60000
			if testing.Short() {
				n = 15000
			}
			val := make([]byte, 16)
			for i := 0; i < n; i++ {
				k := ondisk.Key{ObjectID: 256, Type: 108, Offset: uint64(i) * 4096}
				if err := h.tr.InsertItem(h.a, k, val); err != nil {
					t.Fatal(err)
				}
				h.set(k, val)
			}
			h.check()
			leaves, used := 0, 0
			err := h.tr.Walk(func(nd *diskio.Node, err error) error {
				if err != nil {
					return err
				}
				if nd.IsLeaf() {
					leaves++
					used += int(ns) - ondisk.HeaderSize - nd.LeafFreeSpace()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			fill := float64(used) / float64(leaves*(int(ns)-ondisk.HeaderSize))
			t.Logf("%d items: level %d, %d leaves, leaf fill %.2f", n, h.tr.Level, leaves, fill)
			if fill < 0.9 {
				t.Errorf("sequential inserts left leaves %.2f full, want > 0.9", fill)
			}
			for i := 0; i < n; i += 2 {
				k := ondisk.Key{ObjectID: 256, Type: 108, Offset: uint64(i) * 4096}
				if err := h.tr.DeleteItem(h.a, k); err != nil {
					t.Fatal(err)
				}
				h.del(k)
			}
			h.check()
			h.deleteRange(ondisk.Key{}, ondisk.MaxKey)
			h.check()
			if h.tr.Level != 0 || len(h.a.Live()) != 1 {
				t.Fatalf("after deleting everything: level %d, %d live blocks", h.tr.Level, len(h.a.Live()))
			}
		})
	}
}

// TestBigItems fills trees with maximal and near-maximal items, which forces
// the split cases where an item gets a leaf of its own (double splits).
func TestBigItems(t *testing.T) {
	seed := testSeed(t)
	for _, ns := range nodeSizes {
		t.Run(fmt.Sprint(ns), func(t *testing.T) {
			h := newHarness(t, ns, seed)
			for i := 0; i < 400; i++ {
				k := ondisk.Key{ObjectID: ondisk.ObjectID(256 + h.rnd.Intn(200)), Type: 1, Offset: uint64(h.rnd.Intn(4))}
				var size int
				switch h.rnd.Intn(4) {
				case 0:
					size = h.max
				case 1:
					size = h.max/2 + h.rnd.Intn(h.max/2)
				default:
					size = h.rnd.Intn(30)
				}
				d := h.data(size)
				if err := h.tr.PutItem(h.a, k, d); err != nil {
					h.fatalf("put %v %d bytes: %v", k, size, err)
				}
				h.set(k, d)
				if i%20 == 0 {
					h.check()
				}
			}
			h.check()
			big := h.data(h.max + 1)
			err := h.tr.InsertItem(h.a, ondisk.Key{ObjectID: 1 << 50}, big)
			if !errors.Is(err, ctree.ErrTooLarge) {
				t.Fatalf("insert of %d bytes: err %v, want ErrTooLarge", len(big), err)
			}
			h.check()
		})
	}
}

func BenchmarkInsertSequential1M(b *testing.B) {
	const n = 1 << 20
	for _, ns := range []uint32{4096, 16384} {
		b.Run(fmt.Sprint(ns), func(b *testing.B) {
			val := make([]byte, 16)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				a := ctreetest.New(ns)
				tr, err := ctree.NewEmptyTree(a, testTree)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				for j := 0; j < n; j++ {
					k := ondisk.Key{ObjectID: 256, Type: 108, Offset: uint64(j) * 4096}
					if err := tr.InsertItem(a, k, val); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
		})
	}
}

// TestDeepTree grows trees to several levels with random keys (4 KiB nodes
// to level 3, 16 KiB to level 2), churns them with random operations, then
// deletes everything in random order: node splits with pushes into
// siblings, root growth, node merges and balancing at every level, and root
// shrinks down to an empty leaf.
func TestDeepTree(t *testing.T) {
	seed := testSeed(t)
	for _, tc := range []struct {
		nodesize uint32
		level    int
		grow     float64 // then grow by this fraction more
	}{{4096, 3, 0}, {16384, 2, 1.5}} {
		t.Run(fmt.Sprint(tc.nodesize), func(t *testing.T) {
			h := newHarness(t, tc.nodesize, seed)
			roots := 0
			h.tr.OnRootChange = func(*ctree.Tree) { roots++ }
			ns := int(tc.nodesize)
			target := -1
			for target < 0 || len(h.m) < target {
				if target < 0 && h.tr.Level >= tc.level {
					target = int(float64(len(h.m)) * (1 + tc.grow))
				}
				h.ops++
				k := ondisk.Key{ObjectID: ondisk.ObjectID(1000 + h.rnd.Intn(1<<30)), Type: 1}
				if _, ok := h.m[k]; ok {
					continue
				}
				d := h.data(ns*3/10 + h.rnd.Intn(ns*17/100))
				if err := h.tr.InsertItem(h.a, k, d); err != nil {
					h.fatalf("insert %v: %v", k, err)
				}
				h.set(k, d)
				if h.ops%5000 == 0 {
					h.check()
					h.commit()
				}
			}
			h.check()
			t.Logf("%d items, level %d, %d blocks, %d root changes", len(h.m), h.tr.Level, len(h.a.Live()), roots)
			if roots == 0 {
				t.Errorf("OnRootChange never called")
			}
			for i := 0; i < 5000; i++ {
				h.step(55)
				if i%1000 == 999 {
					h.check()
					h.commit()
				}
			}
			t.Logf("after churn: %d items, level %d, %d blocks", len(h.m), h.tr.Level, len(h.a.Live()))
			keys := slices.Clone(h.keys)
			h.rnd.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
			for i, k := range keys {
				h.ops++
				if err := h.tr.DeleteItem(h.a, k); err != nil {
					h.fatalf("delete %v: %v", k, err)
				}
				h.del(k)
				if i%(len(keys)/5+1) == 0 {
					h.check()
					h.commit()
					t.Logf("%d items left, level %d, %d blocks", len(h.m), h.tr.Level, len(h.a.Live()))
				}
			}
			h.check()
			if h.tr.Level != 0 || len(h.a.Live()) != 1 {
				t.Fatalf("after deleting everything: level %d, %d live blocks", h.tr.Level, len(h.a.Live()))
			}
		})
	}
}

// TestKeyOrderChecks checks that SetItemKey and SetupItemForInsert refuse
// keys that would break the order, leaving the tree untouched.
func TestKeyOrderChecks(t *testing.T) {
	h := newHarness(t, 4096, 1)
	for i := 0; i < 500; i++ {
		k := ondisk.Key{ObjectID: 300, Type: 1, Offset: uint64(i) * 10}
		d := h.data(50)
		if err := h.tr.InsertItem(h.a, k, d); err != nil {
			t.Fatal(err)
		}
		h.set(k, d)
	}
	keys := h.sortedKeys()
	for _, i := range []int{0, 1, 100, len(keys) - 1} {
		p, found, err := h.tr.SearchForWrite(h.a, keys[i], 0)
		if err != nil || !found {
			t.Fatal(found, err)
		}
		for _, j := range []int{i - 1, i + 1} {
			if j < 0 || j >= len(keys) {
				continue
			}
			if err := p.SetItemKey(h.a, keys[j]); !errors.Is(err, ctree.ErrExists) {
				t.Errorf("set key %v to existing %v: err %v, want ErrExists", keys[i], keys[j], err)
			}
		}
		if i > 1 {
			bad := keys[i-2]
			bad.Offset++
			if err := p.SetItemKey(h.a, bad); err == nil {
				t.Errorf("set key %v to %v (below the previous key) succeeded", keys[i], bad)
			}
		}
	}
	p, found, err := h.tr.SearchForWrite(h.a, ondisk.Key{ObjectID: 300, Type: 1, Offset: 55}, 10)
	if err != nil || found {
		t.Fatal(found, err)
	}
	if err := p.SetupItemForInsert(h.a, ondisk.Key{ObjectID: 300, Type: 1, Offset: 75}, 10); err == nil {
		t.Errorf("SetupItemForInsert of a key after the next key succeeded")
	}
	if err := p.SetupItemForInsert(h.a, ondisk.Key{ObjectID: 300, Type: 1, Offset: 60}, 10); !errors.Is(err, ctree.ErrExists) {
		t.Errorf("SetupItemForInsert of an existing key: err %v, want ErrExists", err)
	}
	if err := p.SetupItemForInsert(h.a, ondisk.Key{ObjectID: 300, Type: 1, Offset: 55}, 10); err != nil {
		t.Fatal(err)
	}
	h.set(ondisk.Key{ObjectID: 300, Type: 1, Offset: 55}, make([]byte, 10))
	h.check()
}
