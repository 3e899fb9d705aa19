package fsops

import (
	"bytes"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Subvol describes one subvolume.
type Subvol struct {
	ID       ondisk.ObjectID
	Parent   ondisk.ObjectID // tree holding its directory entry (0 for the top level)
	DirID    ondisk.ObjectID // directory in Parent holding the entry
	Name     string
	Path     string // from the top-level subvolume, "" if unreachable
	Readonly bool
	Gen      ondisk.Generation
	UUID     ondisk.UUID
}

// rootItem reads the ROOT_ITEM of tree id.
func (o *op) rootItem(id ondisk.ObjectID) (item.RootItem, error) {
	ri, _, err := o.rootItemKey(id)
	return ri, err
}

// rootItemKey is rootItem with the item's key (the offset of a
// snapshot's is the transaction it was taken in).
func (o *op) rootItemKey(id ondisk.ObjectID) (item.RootItem, ondisk.Key, error) {
	rt, err := o.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return item.RootItem{}, ondisk.Key{}, err
	}
	p, ok, err := rt.SearchBackward(ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey, Offset: ^uint64(0)})
	if err != nil {
		return item.RootItem{}, ondisk.Key{}, fmt.Errorf("root item %d: %w", id, err)
	}
	if !ok || p.Key().ObjectID != id || p.Key().Type != ondisk.RootItemKey {
		return item.RootItem{}, ondisk.Key{}, errf(syscall.ENOENT, "subvolume %d", id)
	}
	ri, err := item.DecodeRootItem(p.Data())
	if err != nil {
		return ri, p.Key(), corruptf("root item %v: %w", p.Key(), err)
	}
	return ri, p.Key(), nil
}

// writable refuses changes to read-only subvolumes.
func (o *op) writable(root ondisk.ObjectID) error {
	ri, err := o.rootItem(root)
	if err != nil {
		return err
	}
	if ri.Flags&item.RootSubvolRdonly != 0 {
		return errf(syscall.EROFS, "subvolume %d is read-only", root)
	}
	if ri.Refs == 0 {
		return errf(syscall.ENOENT, "subvolume %d is being deleted", root)
	}
	return nil
}

func rootRefKey(parent, child ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: parent, Type: ondisk.RootRefKey, Offset: uint64(child)}
}

func rootBackrefKey(parent, child ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: child, Type: ondisk.RootBackrefKey, Offset: uint64(parent)}
}

// addRootRef records that subvolume child is linked as name in directory
// dirid of tree parent. mirrors btrfs_add_root_ref
func (o *op) addRootRef(parent, child, dirid ondisk.ObjectID, seq uint64, name string) error {
	rt, err := o.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return err
	}
	ref := item.RootRef{DirID: dirid, Sequence: seq, Name: []byte(name)}
	if err := rt.InsertItem(o.a, rootRefKey(parent, child), ref.Bytes()); err != nil {
		return fmt.Errorf("insert root ref %d -> %d: %w", parent, child, err)
	}
	if err := rt.InsertItem(o.a, rootBackrefKey(parent, child), ref.Bytes()); err != nil {
		return fmt.Errorf("insert root backref %d -> %d: %w", parent, child, err)
	}
	return nil
}

// delRootRef removes both root refs and returns the dir index they held.
// mirrors btrfs_del_root_ref
func (o *op) delRootRef(parent, child, dirid ondisk.ObjectID, name string) (uint64, error) {
	rt, err := o.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return 0, err
	}
	data, ok, err := rt.Lookup(rootRefKey(parent, child))
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, corruptf("subvolume %d linked in %d has no ROOT_REF", child, parent)
	}
	ref, err := item.DecodeRootRef(data)
	if err != nil {
		return 0, corruptf("root ref %d -> %d: %w", parent, child, err)
	}
	if ref.DirID != dirid || !bytes.Equal(ref.Name, []byte(name)) {
		return 0, corruptf("root ref %d -> %d names %q in %d, not %q in %d", parent, child, ref.Name, ref.DirID, name, dirid)
	}
	if err := rt.DeleteItem(o.a, rootRefKey(parent, child)); err != nil {
		return 0, fmt.Errorf("delete root ref %d -> %d: %w", parent, child, err)
	}
	if err := rt.DeleteItem(o.a, rootBackrefKey(parent, child)); err != nil && !isNotExist(err) {
		return 0, fmt.Errorf("delete root backref %d -> %d: %w", parent, child, err)
	}
	return ref.Sequence, nil
}

// nextRootID is one past the highest object ondisk.InodeRef in the root tree, at least
// 256. mirrors btrfs_get_free_objectid(tree_root)
func (o *op) nextRootID() (ondisk.ObjectID, error) {
	hi, err := o.highestObjectID(ondisk.RootTreeObjectID)
	if err != nil {
		return 0, err
	}
	id := max(hi+1, ondisk.FirstFreeObjectID)
	if id >= ondisk.LastFreeObjectID {
		return 0, errf(syscall.ENOSPC, "no free subvolume ids")
	}
	return id, nil
}

// prepareLink checks that name can be added to dir.
func (o *op) prepareLink(dir ondisk.InodeRef, name string) (*item.InodeItem, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	dx, err := o.writableDir(dir)
	if err != nil {
		return nil, err
	}
	if _, err := o.lookupEntry(dir, name); err == nil {
		return nil, errf(syscall.EEXIST, "%q in %v", name, dir)
	} else if !isNotExist(err) {
		return nil, err
	}
	return dx, nil
}

// CreateSubvolume makes an empty subvolume linked as name in dir and
// returns its tree ondisk.InodeRef. mirrors create_subvol
func (f *FS) CreateSubvolume(dir ondisk.InodeRef, name string, mode, uid, gid uint32) (ondisk.ObjectID, error) {
	var id ondisk.ObjectID
	err := f.run(func(o *op) error {
		dx, err := o.prepareLink(dir, name)
		if err != nil {
			return err
		}
		if id, err = o.nextRootID(); err != nil {
			return err
		}
		if err := o.reserve(itemsSubvol); err != nil {
			return fmt.Errorf("create subvolume %q in %v: %w", name, dir, err)
		}
		t, err := o.h.CreateTree(id)
		if err != nil {
			return fmt.Errorf("create subvolume %q: %w", name, err)
		}
		o.trees[id] = t
		rootDir := ondisk.InodeRef{Root: id, Ino: RootDirIno}
		if _, err := o.newInode(rootDir, item.SIFDIR|mode&0o7777, uid, gid, 0, 0); err != nil {
			return err
		}
		ref := item.InodeRefs{{Index: 0, Name: []byte("..")}}
		if err := t.InsertItem(o.a, inodeRefKey(RootDirIno, RootDirIno), ref.Bytes()); err != nil {
			return fmt.Errorf("create subvolume %q: %w", name, err)
		}
		e := &Entry{Name: name, Type: item.FTDir, Location: ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey}}
		if err := o.addLink(dir, dx, e); err != nil {
			return err
		}
		return o.addUUID(id)
	})
	return id, err
}

// Snapshot makes a snapshot of subvolume src linked as name in dir.
// mirrors create_snapshot / create_pending_snapshot
func (f *FS) Snapshot(src ondisk.ObjectID, dir ondisk.InodeRef, name string, readonly bool) (ondisk.ObjectID, error) {
	// Like the kernel, which takes snapshots inside the commit, snapshot a
	// committed tree: then no block of the running transaction is shared.
	// (Working around txn: sharing blocks of the running transaction, or
	// changing source and snapshot before the commit, loses blocks.)
	if err := f.Commit(); err != nil {
		return 0, err
	}
	var id ondisk.ObjectID
	err := f.run(func(o *op) error {
		dx, err := o.prepareLink(dir, name)
		if err != nil {
			return err
		}
		if _, err := o.rootItem(src); err != nil {
			return err
		}
		if id, err = o.nextRootID(); err != nil {
			return err
		}
		if err := o.reserve(itemsSnapshot); err != nil {
			return fmt.Errorf("snapshot %d as %q in %v: %w", src, name, dir, err)
		}
		if err := o.h.Snapshot(src, id, readonly); err != nil {
			return fmt.Errorf("snapshot %d as %q: %w", src, name, err)
		}
		delete(o.trees, id)
		e := &Entry{Name: name, Type: item.FTDir,
			Location: ondisk.Key{ObjectID: id, Type: ondisk.RootItemKey, Offset: ^uint64(0)}}
		if err := o.addLink(dir, dx, e); err != nil {
			return err
		}
		return o.addUUID(id)
	})
	if err != nil {
		return 0, err
	}
	// The source's orphans (open files whose last name went) are copied
	// with its tree, but nothing in the snapshot can be open: they go now,
	// read-only snapshot or not. mirrors create_snapshot's btrfs_orphan_cleanup
	if _, err := f.cleanOrphansOf(id); err != nil {
		return id, fmt.Errorf("snapshot %d as %q: %w", src, name, err)
	}
	// and the snapshot, like the kernel's, exists from the end of a commit.
	return id, f.Commit()
}

// DeleteSubvolume unlinks the subvolume called name in dir and deletes its
// tree. It refuses the default subvolume and subvolumes holding others.
// mirrors btrfs_delete_subvolume
func (f *FS) DeleteSubvolume(dir ondisk.InodeRef, name string) error {
	return f.run(func(o *op) error {
		dx, err := o.writableDir(dir)
		if err != nil {
			return err
		}
		e, err := o.lookupEntry(dir, name)
		if err != nil {
			return err
		}
		if !e.IsSubvol() {
			return errf(syscall.EINVAL, "delete subvolume %q in %v: not a subvolume", name, dir)
		}
		return o.deleteSubvolEntry(dir, dx, name, e, false)
	})
}

// deleteSubvol is rmdir on a subvolume: it must be empty.
func (o *op) deleteSubvol(dir ondisk.InodeRef, dx *item.InodeItem, name string, e *Entry) error {
	return o.deleteSubvolEntry(dir, dx, name, e, true)
}

func (o *op) deleteSubvolEntry(dir ondisk.InodeRef, dx *item.InodeItem, name string, e *Entry, mustBeEmpty bool) error {
	sub := e.Location.ObjectID
	if def, err := o.defaultSubvol(); err != nil {
		return err
	} else if def == sub {
		return errf(syscall.EPERM, "delete subvolume %q: it is the default subvolume", name)
	}
	rt, err := o.tree(ondisk.RootTreeObjectID)
	if err != nil {
		return err
	}
	nested := false
	err = rt.Range(ondisk.Key{ObjectID: sub, Type: ondisk.RootRefKey},
		ondisk.Key{ObjectID: sub, Type: ondisk.RootRefKey, Offset: ^uint64(0)},
		func(ondisk.Key, []byte) bool { nested = true; return false })
	if err != nil {
		return err
	}
	if nested {
		return errf(syscall.ENOTEMPTY, "delete subvolume %q: it holds other subvolumes", name)
	}
	if mustBeEmpty {
		empty, err := o.dirEmpty(ondisk.InodeRef{Root: sub, Ino: RootDirIno})
		if err != nil {
			return err
		}
		if !empty {
			return errf(syscall.ENOTEMPTY, "rmdir subvolume %q", name)
		}
	}
	if err := o.reserveForDelete(itemsDelSubvol); err != nil {
		return fmt.Errorf("delete subvolume %q in %v: %w", name, dir, err)
	}
	if _, err := o.removeLink(dir, dx, name); err != nil {
		return err
	}
	if err := o.delUUID(sub); err != nil {
		return err
	}
	if err := o.h.DeleteTree(sub); err != nil {
		return fmt.Errorf("delete subvolume %q (%d): %w", name, sub, err)
	}
	delete(o.trees, sub)
	delete(o.f.nextIno, sub)
	for k := range o.f.nextIndex {
		if k.Root == sub {
			delete(o.f.nextIndex, k)
		}
	}
	return nil
}

// defaultSubvol reads the "default" entry of the root tree directory.
func (o *op) defaultSubvol() (ondisk.ObjectID, error) {
	e, err := o.lookupEntry(ondisk.InodeRef{Root: ondisk.RootTreeObjectID, Ino: ondisk.RootTreeDirObjectID}, "default")
	if err != nil {
		if isNotExist(err) {
			return ondisk.FSTreeObjectID, nil
		}
		return 0, err
	}
	return e.Location.ObjectID, nil
}

// uuidSlot returns the uuid tree and the UUID_SUBVOL key of subvolume id's
// uuid; the tree is nil when there is no uuid tree or the subvolume has no
// uuid.
func (o *op) uuidSlot(id ondisk.ObjectID) (*ctree.Tree, ondisk.Key, error) {
	ri, err := o.rootItem(id)
	if err != nil || ri.UUID.IsZero() {
		return nil, ondisk.Key{}, err
	}
	ut, err := o.tree(ondisk.UUIDTreeObjectID)
	if err != nil {
		if isNotExist(err) {
			err = nil
		}
		return nil, ondisk.Key{}, err
	}
	oid, off := item.UUIDKey(ri.UUID)
	return ut, ondisk.Key{ObjectID: ondisk.ObjectID(oid), Type: ondisk.UUIDKeySubvol, Offset: off}, nil
}

// addUUID records a new subvolume's uuid in the uuid tree, when there is one.
// mirrors btrfs_uuid_tree_add
func (o *op) addUUID(id ondisk.ObjectID) error {
	ut, key, err := o.uuidSlot(id)
	if ut == nil || err != nil {
		return err
	}
	var x item.UUIDItem
	if data, ok, err := ut.Lookup(key); err != nil {
		return err
	} else if ok {
		if x, err = item.DecodeUUIDItem(data); err != nil {
			return corruptf("uuid item %v: %w", key, err)
		}
	}
	for _, s := range x.SubvolIDs {
		if s == uint64(id) {
			return nil
		}
	}
	x.SubvolIDs = append(x.SubvolIDs, uint64(id))
	return ut.PutItem(o.a, key, x.Bytes())
}

// delUUID removes a subvolume from the uuid tree. mirrors btrfs_uuid_tree_remove
func (o *op) delUUID(id ondisk.ObjectID) error {
	ut, key, err := o.uuidSlot(id)
	if ut == nil || err != nil {
		return err
	}
	data, ok, err := ut.Lookup(key)
	if err != nil || !ok {
		return err
	}
	x, err := item.DecodeUUIDItem(data)
	if err != nil {
		return corruptf("uuid item %v: %w", key, err)
	}
	var rest item.UUIDItem
	for _, s := range x.SubvolIDs {
		if s != uint64(id) {
			rest.SubvolIDs = append(rest.SubvolIDs, s)
		}
	}
	if len(rest.SubvolIDs) == 0 {
		return ut.DeleteItem(o.a, key)
	}
	return ut.UpdateItem(o.a, key, rest.Bytes())
}

// ListSubvolumes returns every subvolume but the top level, by ondisk.InodeRef.
func (f *FS) ListSubvolumes() ([]Subvol, error) {
	var out []Subvol
	err := f.run(func(o *op) error {
		rt, err := o.tree(ondisk.RootTreeObjectID)
		if err != nil {
			return err
		}
		var derr error
		err = rt.Range(ondisk.Key{ObjectID: ondisk.FirstFreeObjectID}, ondisk.Key{ObjectID: ondisk.LastFreeObjectID},
			func(k ondisk.Key, data []byte) bool {
				switch k.Type {
				case ondisk.RootItemKey:
					ri, err := item.DecodeRootItem(data)
					if err != nil {
						derr = corruptf("root item %v: %w", k, err)
						return false
					}
					if ri.Refs == 0 {
						return true // being deleted
					}
					out = append(out, Subvol{ID: k.ObjectID, Readonly: ri.Flags&item.RootSubvolRdonly != 0,
						Gen: ri.Generation, UUID: ri.UUID})
				case ondisk.RootBackrefKey:
					if n := len(out); n > 0 && out[n-1].ID == k.ObjectID {
						r, err := item.DecodeRootRef(data)
						if err != nil {
							derr = corruptf("root backref %v: %w", k, err)
							return false
						}
						out[n-1].Parent, out[n-1].DirID, out[n-1].Name = ondisk.ObjectID(k.Offset), r.DirID, string(r.Name)
					}
				}
				return true
			})
		if err != nil {
			return err
		}
		if derr != nil {
			return derr
		}
		for i := range out {
			out[i].Path = o.subvolPath(out, i, 0)
		}
		return nil
	})
	return out, err
}

// subvolPath joins the names from the top level down to subvolume i.
func (o *op) subvolPath(all []Subvol, i, depth int) string {
	s := all[i]
	if s.Parent == 0 || depth > 64 {
		return ""
	}
	dir, err := o.inodePath(ondisk.InodeRef{Root: s.Parent, Ino: s.DirID})
	if err != nil {
		return ""
	}
	p := joinPath(dir, s.Name)
	if s.Parent == ondisk.FSTreeObjectID {
		return p
	}
	for j := range all {
		if all[j].ID == s.Parent {
			if pp := o.subvolPath(all, j, depth+1); pp != "" {
				return joinPath(pp, p)
			}
		}
	}
	return ""
}

// inodePath is the path of directory id from its subvolume's root.
func (o *op) inodePath(id ondisk.InodeRef) (string, error) {
	var parts []string
	for cur := id; cur.Ino != RootDirIno; {
		parent, err := o.parentDir(cur)
		if err != nil {
			return "", err
		}
		t, err := o.tree(cur.Root)
		if err != nil {
			return "", err
		}
		data, ok, err := t.Lookup(inodeRefKey(cur.Ino, parent))
		if err != nil || !ok {
			return "", fmt.Errorf("path of %v: no inode ref", id)
		}
		r, _, err := item.DecodeInodeRef(data)
		if err != nil {
			return "", corruptf("inode ref of %v: %w", cur, err)
		}
		parts = append([]string{string(r.Name)}, parts...)
		cur.Ino = parent
		if len(parts) > 4096 {
			return "", corruptf("path of %v: loop", id)
		}
	}
	p := ""
	for _, s := range parts {
		p = joinPath(p, s)
	}
	return p, nil
}

func joinPath(a, b string) string {
	if a == "" {
		return b
	}
	return a + "/" + b
}
