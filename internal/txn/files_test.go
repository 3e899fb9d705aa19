package txn_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// Minimal file and subvolume helpers for tests: just enough inode items,
// directory entries and file extents for btrfs check to accept the trees.

const rootDir ondisk.ObjectID = 256

func inodeKey(ino ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.InodeItemKey}
}

type op struct {
	t    testing.TB
	h    *txn.Handle
	a    ctree.Allocator
	seen map[ondisk.ObjectID]*ctree.Tree
}

func newOp(t testing.TB, h *txn.Handle) *op {
	return &op{t: t, h: h, a: h.Alloc(), seen: map[ondisk.ObjectID]*ctree.Tree{}}
}

func (o *op) tree(id ondisk.ObjectID) *ctree.Tree {
	o.t.Helper()
	t, err := o.h.Tree(id)
	if err != nil {
		o.t.Fatalf("tree %d: %v", id, err)
	}
	return t
}

func (o *op) must(err error, what string, args ...any) {
	o.t.Helper()
	if err != nil {
		o.t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}

func (o *op) readInode(t *ctree.Tree, ino ondisk.ObjectID) item.InodeItem {
	o.t.Helper()
	data, ok, err := t.Lookup(inodeKey(ino))
	if err != nil || !ok {
		o.t.Fatalf("inode %d of tree %d: found %v, %v", ino, t.ID, ok, err)
	}
	x, err := item.DecodeInodeItem(data)
	o.must(err, "decode inode %d", ino)
	return x
}

func (o *op) writeInode(t *ctree.Tree, ino ondisk.ObjectID, x item.InodeItem) {
	o.t.Helper()
	x.Transid = uint64(o.h.Transid())
	o.must(t.UpdateItem(o.a, inodeKey(ino), x.Bytes()), "update inode %d", ino)
}

// link adds name -> location in directory rootDir of t (index = given).
func (o *op) link(t *ctree.Tree, name string, index uint64, loc ondisk.Key, ft uint8) {
	o.t.Helper()
	d := item.DirItems{{Location: loc, Transid: uint64(o.h.Transid()), Type: ft, Name: []byte(name)}}
	o.must(t.InsertItem(o.a, ondisk.Key{ObjectID: rootDir, Type: ondisk.DirItemKey, Offset: item.NameHash([]byte(name))},
		d.Bytes()), "dir item %s", name)
	o.must(t.InsertItem(o.a, ondisk.Key{ObjectID: rootDir, Type: ondisk.DirIndexKey, Offset: index}, d.Bytes()),
		"dir index %s", name)
	dx := o.readInode(t, rootDir)
	dx.Size += 2 * uint64(len(name))
	o.writeInode(t, rootDir, dx)
}

func (o *op) unlink(t *ctree.Tree, name string, index uint64) {
	o.t.Helper()
	o.must(t.DeleteItem(o.a, ondisk.Key{ObjectID: rootDir, Type: ondisk.DirItemKey, Offset: item.NameHash([]byte(name))}),
		"delete dir item %s", name)
	o.must(t.DeleteItem(o.a, ondisk.Key{ObjectID: rootDir, Type: ondisk.DirIndexKey, Offset: index}),
		"delete dir index %s", name)
	dx := o.readInode(t, rootDir)
	dx.Size -= 2 * uint64(len(name))
	o.writeInode(t, rootDir, dx)
}

// createFile makes an empty regular file ino named name in rootDir of tree.
func (o *op) createFile(tree ondisk.ObjectID, ino ondisk.ObjectID, name string) {
	o.t.Helper()
	t := o.tree(tree)
	tid := uint64(o.h.Transid())
	x := item.InodeItem{Generation: tid, Transid: tid, NLink: 1, Mode: 0o100644}
	o.must(t.InsertItem(o.a, inodeKey(ino), x.Bytes()), "insert inode %d", ino)
	ref := item.InodeRefs{{Index: uint64(ino), Name: []byte(name)}}
	o.must(t.InsertItem(o.a, ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey, Offset: uint64(rootDir)}, ref.Bytes()),
		"insert inode ref %d", ino)
	o.link(t, name, uint64(ino), inodeKey(ino), item.FTRegFile)
}

// addExtent points file offset off of ino at [addr, addr+n) (offset 0 into
// the extent) and adds the data reference.
func (o *op) addExtent(tree, ino ondisk.ObjectID, off uint64, addr ondisk.LogicalAddr, n uint64) {
	o.t.Helper()
	t := o.tree(tree)
	fi := item.FileExtentItem{Generation: o.h.Transid(), RAMBytes: n, Type: item.FileExtentReg,
		DiskBytenr: addr, DiskNumBytes: n, NumBytes: n}
	o.must(t.InsertItem(o.a, ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: off}, fi.Bytes()),
		"insert extent of %d at %d", ino, off)
	o.must(o.h.AddDataRef(addr, n, tree, ino, off), "add data ref")
	x := o.readInode(t, ino)
	x.Size = max(x.Size, off+n)
	x.NBytes += n
	o.writeInode(t, ino, x)
}

// writeNew allocates, writes and checksums a new extent of data and maps it at off.
func (o *op) writeNew(tree, ino ondisk.ObjectID, off uint64, data []byte) (ondisk.LogicalAddr, error) {
	o.t.Helper()
	addr, err := o.h.AllocData(uint64(len(data)))
	if err != nil {
		return 0, err
	}
	o.must(o.h.WriteData(addr, data), "write data")
	o.must(o.h.AddCsums(addr, data), "add csums")
	o.addExtent(tree, ino, off, addr, uint64(len(data)))
	return addr, nil
}

// deleteFile drops every extent of ino and removes it.
func (o *op) deleteFile(tree, ino ondisk.ObjectID, name string) {
	o.t.Helper()
	t := o.tree(tree)
	type ext struct {
		off uint64
		fi  item.FileExtentItem
	}
	var exts []ext
	err := t.Range(ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey},
		ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			fi, err := item.DecodeFileExtentItem(data)
			o.must(err, "decode extent")
			exts = append(exts, ext{k.Offset, fi})
			return true
		})
	o.must(err, "list extents of %d", ino)
	for _, e := range exts {
		o.must(o.h.DropDataRef(e.fi.DiskBytenr, e.fi.DiskNumBytes, tree, ino, e.off-e.fi.Offset), "drop data ref")
	}
	o.must(t.DeleteRange(o.a, ondisk.Key{ObjectID: ino}, ondisk.Key{ObjectID: ino, Type: 0xff, Offset: ^uint64(0)}),
		"delete items of %d", ino)
	o.unlink(t, name, uint64(ino))
}

// createSubvol makes subvolume id with an empty root directory, linked as
// name (index) in FS_TREE's root directory.
func (o *op) createSubvol(id ondisk.ObjectID, name string, index uint64) {
	o.t.Helper()
	t, err := o.h.CreateTree(id)
	o.must(err, "create tree %d", id)
	tid := uint64(o.h.Transid())
	x := item.InodeItem{Generation: tid, Transid: tid, NLink: 1, Mode: 0o40755}
	o.must(t.InsertItem(o.a, inodeKey(rootDir), x.Bytes()), "root dir inode")
	ref := item.InodeRefs{{Index: 0, Name: []byte("..")}}
	o.must(t.InsertItem(o.a, ondisk.Key{ObjectID: rootDir, Type: ondisk.InodeRefKey, Offset: uint64(rootDir)}, ref.Bytes()),
		"root dir ref")
	o.linkSubvol(id, name, index, 0)
}

// linkSubvol adds the dir entries and root refs of subvolume id in FS_TREE's root dir.
func (o *op) linkSubvol(id ondisk.ObjectID, name string, index uint64, locOffset uint64) {
	o.t.Helper()
	fst := o.tree(ondisk.FSTreeObjectID)
	o.link(fst, name, index, ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey, Offset: locOffset}, item.FTDir)
	rt := o.tree(ondisk.RootTreeObjectID)
	rr := item.RootRef{DirID: rootDir, Sequence: index, Name: []byte(name)}
	o.must(rt.InsertItem(o.a, ondisk.Key{ObjectID: ondisk.FSTreeObjectID, Type: ondisk.RootRefKey, Offset: uint64(id)},
		rr.Bytes()), "root ref")
	o.must(rt.InsertItem(o.a, ondisk.Key{ObjectID: id, Type: ondisk.RootBackrefKey, Offset: uint64(ondisk.FSTreeObjectID)},
		rr.Bytes()), "root backref")
}

func (o *op) snapshot(src, dst ondisk.ObjectID, name string, index uint64, readonly bool) {
	o.t.Helper()
	o.must(o.h.Snapshot(src, dst, readonly), "snapshot %d as %d", src, dst)
	o.linkSubvol(dst, name, index, ^uint64(0))
}

func (o *op) deleteSubvol(id ondisk.ObjectID, name string, index uint64) {
	o.t.Helper()
	o.unlink(o.tree(ondisk.FSTreeObjectID), name, index)
	o.must(o.h.DeleteTree(id), "delete tree %d", id)
}

// ---- model ----

type mExt struct {
	off  uint64
	addr ondisk.LogicalAddr
	n    uint64
}

type mFile struct {
	name string
	exts []mExt
}

type mSubvol struct {
	id    ondisk.ObjectID
	name  string
	index uint64
	files map[ondisk.ObjectID]*mFile
	next  ondisk.ObjectID
}

type model struct {
	subvols map[ondisk.ObjectID]*mSubvol
	data    map[ondisk.LogicalAddr][]byte
	nextID  ondisk.ObjectID
	// commitProb: randomOps commits after an operation with probability 1/commitProb (0: 25).
	commitProb int
	// beforeCommit, if set, is called before every commit randomOps makes
	// (explicit, or inside Snapshot).
	beforeCommit func(gen ondisk.Generation)
}

// clone deep-copies the model (the data map is shared: extents never change).
func (m *model) clone() *model {
	c := &model{subvols: map[ondisk.ObjectID]*mSubvol{}, data: m.data, nextID: m.nextID}
	for id, s := range m.subvols {
		ns := *s
		ns.files = map[ondisk.ObjectID]*mFile{}
		for ino, f := range s.files {
			ns.files[ino] = &mFile{name: f.name, exts: append([]mExt(nil), f.exts...)}
		}
		c.subvols[id] = &ns
	}
	return c
}

func newModel() *model {
	return &model{subvols: map[ondisk.ObjectID]*mSubvol{
		ondisk.FSTreeObjectID: {id: ondisk.FSTreeObjectID, files: map[ondisk.ObjectID]*mFile{}, next: 257},
	}, data: map[ondisk.LogicalAddr][]byte{}, nextID: 256}
}

func (m *model) ids() []ondisk.ObjectID {
	var out []ondisk.ObjectID
	for id := range m.subvols {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (s *mSubvol) inos() []ondisk.ObjectID {
	var out []ondisk.ObjectID
	for ino := range s.files {
		out = append(out, ino)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (f *mFile) end() uint64 {
	e := uint64(0)
	for _, x := range f.exts {
		e = max(e, x.off+x.n)
	}
	return e
}

// verify compares every subvolume, file and extent with what is on disk.
func (m *model) verify(t testing.TB, img *image) {
	t.Helper()
	for _, id := range m.ids() {
		s := m.subvols[id]
		tree, err := img.fi.Tree(id)
		if err != nil {
			t.Fatalf("tree %d: %v", id, err)
		}
		for _, ino := range s.inos() {
			f := s.files[ino]
			var got []mExt
			err := tree.Range(ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey},
				ondisk.Key{ObjectID: ino, Type: ondisk.ExtentDataKey, Offset: ^uint64(0)},
				func(k ondisk.Key, data []byte) bool {
					fi, _ := item.DecodeFileExtentItem(data)
					got = append(got, mExt{k.Offset, fi.DiskBytenr, fi.DiskNumBytes})
					return true
				})
			if err != nil {
				t.Fatalf("tree %d ino %d: %v", id, ino, err)
			}
			if fmt.Sprint(got) != fmt.Sprint(f.exts) {
				t.Fatalf("tree %d ino %d: extents %v, want %v", id, ino, got, f.exts)
			}
			for _, e := range f.exts {
				buf := make([]byte, e.n)
				if err := img.fi.R.ReadLogical(buf, e.addr, 0); err != nil {
					t.Fatalf("read %d: %v", e.addr, err)
				}
				if !bytes.Equal(buf, m.data[e.addr]) {
					t.Fatalf("tree %d ino %d: data at %d differs", id, ino, e.addr)
				}
			}
		}
	}
}

// randomOps runs n random operations in handles of img's running transaction.
func (m *model) randomOps(t testing.TB, img *image, r *rand.Rand, n int, snapshots bool) (enospc bool) {
	t.Helper()
	for i := 0; i < n; i++ {
		h := img.begin(t)
		o := newOp(t, h)
		ids := m.ids()
		s := m.subvols[ids[r.Intn(len(ids))]]
		dbg := func(f string, a ...any) {
			if debugOps {
				fmt.Printf("OP tx%d "+f+"\n", append([]any{h.Transid()}, a...)...)
			}
		}
		switch k := r.Intn(100); {
		case k < 40 || len(s.files) == 0: // new file with data
			ino := s.next
			s.next++
			name := fmt.Sprintf("f%d", ino)
			dbg("create %d/%d", s.id, ino)
			o.createFile(s.id, ino, name)
			f := &mFile{name: name}
			s.files[ino] = f
			for j := 0; j < 1+r.Intn(3); j++ {
				data := randBytes(r, 4096*(1+r.Intn(16)))
				off := f.end() + uint64(4096*r.Intn(2))
				addr, err := o.writeNew(s.id, ino, off, data)
				if isNoSpace(err) {
					enospc = true
					break
				}
				o.must(err, "write new")
				m.data[addr] = data
				f.exts = append(f.exts, mExt{off, addr, uint64(len(data))})
			}
		case k < 60: // reflink an extent into another file (maybe of another subvolume)
			src := s.files[s.inos()[r.Intn(len(s.files))]]
			if len(src.exts) == 0 {
				break
			}
			e := src.exts[r.Intn(len(src.exts))]
			ds := m.subvols[ids[r.Intn(len(ids))]]
			if len(ds.files) == 0 {
				break
			}
			dino := ds.inos()[r.Intn(len(ds.files))]
			df := ds.files[dino]
			off := df.end()
			dbg("reflink %d to %d/%d", e.addr, ds.id, dino)
			o.addExtent(ds.id, dino, off, e.addr, e.n)
			df.exts = append(df.exts, mExt{off, e.addr, e.n})
		case k < 80: // delete a file
			ino := s.inos()[r.Intn(len(s.files))]
			dbg("delete %d/%d", s.id, ino)
			o.deleteFile(s.id, ino, s.files[ino].name)
			delete(s.files, ino)
		case k < 88 && snapshots: // snapshot a subvolume other than FS_TREE, or create one
			m.nextID++
			id := m.nextID
			name := fmt.Sprintf("sv%d", id)
			index := uint64(1<<40) - uint64(id) // below every index Linux gives (max+1)
			var ns *mSubvol
			if len(ids) == 1 || r.Intn(4) == 0 {
				dbg("create subvol %d", id)
				o.createSubvol(id, name, index)
				ns = &mSubvol{id: id, files: map[ondisk.ObjectID]*mFile{}, next: 257}
			} else {
				src := m.subvols[ids[1+r.Intn(len(ids)-1)]]
				if m.beforeCommit != nil {
					m.beforeCommit(h.Transid())
				}
				dbg("snapshot %d -> %d", src.id, id)
				o.snapshot(src.id, id, name, index, r.Intn(3) == 0)
				ns = &mSubvol{id: id, files: map[ondisk.ObjectID]*mFile{}, next: src.next}
				for ino, f := range src.files {
					ns.files[ino] = &mFile{name: f.name, exts: append([]mExt(nil), f.exts...)}
				}
			}
			ns.name, ns.index = name, index
			m.subvols[id] = ns
		case k < 92 && snapshots && len(ids) > 1: // delete a subvolume
			v := m.subvols[ids[1+r.Intn(len(ids)-1)]]
			dbg("delete subvol %d", v.id)
			o.deleteSubvol(v.id, v.name, v.index)
			delete(m.subvols, v.id)
		default: // xattr churn in FS_TREE
			tr := o.tree(ondisk.FSTreeObjectID)
			for j := 0; j < 20; j++ {
				name := fmt.Sprintf("user.x%d", r.Intn(400))
				if _, ok, _ := tr.Lookup(xattrKey(rootDir, name)); ok {
					delXattr(t, h, tr, rootDir, name)
				} else {
					setXattr(t, h, tr, rootDir, name, randBytes(r, r.Intn(300)))
				}
			}
		}
		h.End()
		if enospc {
			return true
		}
		p := m.commitProb
		if p == 0 {
			p = 25
		}
		if r.Intn(p) == 0 {
			if m.beforeCommit != nil {
				m.beforeCommit(img.fs.Transid())
			}
			img.commit(t)
		}
	}
	return false
}

func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

var debugOps = false
