package txn

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/extent"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// treeExists reports whether tree id has a ROOT_ITEM.
func (f *Engine) treeExists(id ondisk.ObjectID) (bool, error) {
	if f.trees[id] != nil {
		return true, nil
	}
	_, _, err := f.Info.RootItem(id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fsinfo.ErrNoTree):
		return false, nil
	}
	return false, err
}

// newTree makes a tree for owner whose root is a new block: an empty leaf,
// or a copy of src. mirrors btrfs_create_tree / btrfs_copy_root
func (f *Engine) newTree(owner ondisk.ObjectID, src *diskio.Node) (*ctree.Tree, error) {
	t, err := ctree.NewEmptyTree(allocator{f}, owner)
	if err != nil {
		return nil, err
	}
	t.R = f.Info.R
	t.RootChanged = false
	if src == nil {
		return t, nil
	}
	n := f.dirty[t.Root]
	if n == nil {
		return nil, fmt.Errorf("txn: new root %d of tree %d is not a block of this transaction", uint64(t.Root), owner)
	}
	copy(n.Data, src.Data)
	f.initHeader(n, owner, src.Level())
	t.Level = src.Level()
	f.refs.SetLevel(n.Addr, src.Level())
	return t, nil
}

// rootNode reads a tree's root block.
func rootNode(t *ctree.Tree) (*diskio.Node, error) {
	p, _, err := t.Search(ondisk.Key{})
	if err != nil {
		return nil, err
	}
	if n := p.Nodes[t.Level]; n != nil && n.Addr == t.Root {
		return n, nil
	}
	return nil, diskio.Corruptf("tree %s: root %d not at level %d", ondisk.TreeName(t.ID), uint64(t.Root), t.Level)
}

func isSubvolID(id ondisk.ObjectID) bool {
	return id == ondisk.FSTreeObjectID || id >= ondisk.FirstFreeObjectID && id <= ondisk.LastFreeObjectID
}

func newUUID() ondisk.UUID {
	var u ondisk.UUID
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// Snapshot creates tree dst as a snapshot of subvolume src: dst's root is a
// copy of src's committed root, every child of it gains a reference from
// dst, src records the snapshot (last_snapshot), and the uuid tree (when
// there is one) the new subvolume. Like the kernel's, it
// commits the running transaction first (so src's state before this call
// is what dst gets). The caller links dst into a directory.
// mirrors create_pending_snapshot
func (h *Handle) Snapshot(src, dst ondisk.ObjectID, readonly bool) error {
	if err := h.check(); err != nil {
		return err
	}
	f := h.f
	if !isSubvolID(src) || !isSubvolID(dst) || dst == ondisk.FSTreeObjectID {
		return fmt.Errorf("txn: snapshot %d as %d: not subvolume ids: %w", src, dst, syscall.EINVAL)
	}
	if ok, err := f.treeExists(dst); err != nil || ok {
		if err == nil {
			err = fs.ErrExist
		}
		return fmt.Errorf("txn: snapshot %d as %d: %w", src, dst, err)
	}
	sts, err := f.tree(src)
	if err != nil {
		return fmt.Errorf("txn: snapshot %d: %w", src, err)
	}
	if err := f.snapshot(sts, src, dst, readonly); err != nil {
		return f.abort(fmt.Errorf("snapshot %d as %d: %w", src, dst, err))
	}
	return nil
}

func (f *Engine) snapshot(sts *treeState, src, dst ondisk.ObjectID, readonly bool) error {
	a := allocator{f}
	// 1. Commit first, as the kernel does for every snapshot: the blocks the
	//    snapshot shares are then on disk, read the same through either
	//    tree, and never changed in place again.
	if f.needsCommit() {
		if err := f.commitLocked(); err != nil {
			return err
		}
	}
	old, err := rootNode(sts.t)
	if err != nil {
		return err
	}
	// 2. Record the snapshot in src: its blocks up to now may be shared.
	sts.item.LastSnapshot = uint64(f.transid)
	sts.itemDirty = true
	// 3. Copy the root and reference its children from dst.
	dt, err := f.newTree(dst, old)
	if err != nil {
		return err
	}
	cp := f.dirty[dt.Root]
	if err := f.ext.ModRefs(extent.Root{ID: dst, Shareable: true}, cp, false, 1); err != nil {
		return err
	}
	// 4. The new ROOT_ITEM, keyed by the snapshot's transaction.
	ri := sts.item
	ri.Flags &^= item.RootSubvolRdonly
	if readonly {
		ri.Flags |= item.RootSubvolRdonly
	}
	ri.Bytenr, ri.Level, ri.Generation, ri.GenerationV2 = dt.Root, uint8(dt.Level), dt.Gen, dt.Gen
	ri.UUID = newUUID()
	ri.ParentUUID = sts.item.UUID
	if !readonly {
		ri.ReceivedUUID = ondisk.UUID{}
		ri.Stime, ri.Rtime = item.Timespec{}, item.Timespec{}
		ri.Stransid, ri.Rtransid = 0, 0
	}
	ri.Otime = item.TimespecOf(time.Now())
	ri.Otransid = uint64(f.transid)
	ri.DropProgress, ri.DropLevel = ondisk.Key{}, 0
	key := ondisk.Key{ObjectID: dst, Type: ondisk.RootItemKey, Offset: uint64(f.transid)}
	rt, err := f.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return err
	}
	if err := rt.t.InsertItem(a, key, ri.Bytes()); err != nil {
		return err
	}
	f.trees[dst] = &treeState{t: dt, hasItem: true, key: key, item: ri}
	if err := f.uuidAdd(ri.UUID, ondisk.UUIDKeySubvol, dst); err != nil {
		return err
	}
	return f.uuidAdd(ri.ReceivedUUID, ondisk.UUIDKeyReceivedSubvol, dst)
}

// CreateTree creates tree id with an empty leaf as root and its ROOT_ITEM
// (for a subvolume: root dir 256, uuid, times; the caller creates the
// directory inode). mirrors create_subvol / btrfs_create_tree
func (h *Handle) CreateTree(id ondisk.ObjectID) (*ctree.Tree, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	f := h.f
	if id == ondisk.RootTreeObjectID || id == ondisk.ChunkTreeObjectID || id == ondisk.TreeLogObjectID {
		return nil, fmt.Errorf("txn: create tree %s: %w", ondisk.TreeName(id), syscall.EINVAL)
	}
	if ok, err := f.treeExists(id); err != nil || ok {
		if err == nil {
			err = fs.ErrExist
		}
		return nil, fmt.Errorf("txn: create tree %s: %w", ondisk.TreeName(id), err)
	}
	t, err := f.newTree(id, nil)
	if err != nil {
		return nil, f.abort(err)
	}
	now := item.TimespecOf(time.Now())
	ri := item.RootItem{Bytenr: t.Root, Level: 0, Generation: t.Gen, GenerationV2: t.Gen, Refs: 1}
	if isSubvolID(id) {
		ri.Inode = item.InodeItem{Generation: 1, Size: 3, NLink: 1, NBytes: uint64(f.super.NodeSize),
			Mode: 0o40755, Flags: item.InodeRootItemInit}
		ri.RootDirID = ondisk.FirstFreeObjectID
		ri.UUID = newUUID()
		ri.Ctransid, ri.Otransid = uint64(f.transid), uint64(f.transid)
		ri.Ctime, ri.Otime = now, now
	}
	key := ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey}
	rt, err := f.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return nil, err
	}
	if err := rt.t.InsertItem(allocator{f}, key, ri.Bytes()); err != nil {
		return nil, f.abort(err)
	}
	f.trees[id] = &treeState{t: t, hasItem: true, key: key, item: ri}
	if err := f.uuidAdd(ri.UUID, ondisk.UUIDKeySubvol, id); err != nil {
		return nil, f.abort(err)
	}
	return t, nil
}

// DeleteTree drops every reference of subvolume tree id and removes its
// ROOT_ITEM (and any orphan item, root back reference or uuid tree entry
// left for it); the caller has unlinked it from its directory. The space is freed at commit.
// mirrors btrfs_drop_snapshot (in one go) + btrfs_del_root
func (h *Handle) DeleteTree(id ondisk.ObjectID) error {
	if err := h.check(); err != nil {
		return err
	}
	f := h.f
	if !isSubvolID(id) || id == ondisk.FSTreeObjectID {
		return fmt.Errorf("txn: delete tree %s: only subvolumes other than FS_TREE: %w", ondisk.TreeName(id), syscall.EINVAL)
	}
	ts, err := f.tree(id)
	if err != nil {
		return fmt.Errorf("txn: delete tree %d: %w", id, err)
	}
	if err := f.deleteTree(ts, id); err != nil {
		return f.abort(fmt.Errorf("delete tree %d: %w", id, err))
	}
	return nil
}

func (f *Engine) deleteTree(ts *treeState, id ondisk.ObjectID) error {
	tr := f.env()
	if err := f.uuidDel(ts.item.UUID, ondisk.UUIDKeySubvol, id); err != nil {
		return err
	}
	if err := f.uuidDel(ts.item.ReceivedUUID, ondisk.UUIDKeyReceivedSubvol, id); err != nil {
		return err
	}
	if err := f.ext.DropTree(tr, ts.t, f.root(id), ts.key.Offset); err != nil {
		return err
	}
	rt, err := f.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return err
	}
	a := allocator{f}
	if err := rt.t.DeleteItem(a, ts.key); err != nil {
		return err
	}
	delete(f.trees, id)
	orphan := ondisk.Key{ObjectID: ondisk.OrphanObjectID, Type: ondisk.OrphanItemKey, Offset: uint64(id)}
	if err := deleteIfPresent(rt.t, a, orphan); err != nil {
		return err
	}
	var backrefs []ondisk.Key
	err = rt.t.Range(ondisk.Key{ObjectID: id, Type: ondisk.RootBackrefKey},
		ondisk.Key{ObjectID: id, Type: ondisk.RootBackrefKey, Offset: ^uint64(0)},
		func(k ondisk.Key, _ []byte) bool { backrefs = append(backrefs, k); return true })
	if err != nil {
		return err
	}
	for _, k := range backrefs {
		if err := rt.t.DeleteItem(a, k); err != nil {
			return err
		}
		ref := ondisk.Key{ObjectID: ondisk.ObjectID(k.Offset), Type: ondisk.RootRefKey, Offset: uint64(id)}
		if err := deleteIfPresent(rt.t, a, ref); err != nil {
			return err
		}
	}
	return nil
}

func deleteIfPresent(t *ctree.Tree, a ctree.Allocator, k ondisk.Key) error {
	if err := t.DeleteItem(a, k); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
