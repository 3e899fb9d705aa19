package fsops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Entry is one name in a directory.
type Entry struct {
	Name  string
	Index uint64 // DIR_INDEX position
	Type  uint8  // BTRFS_FT_*
	// Location is what the entry points to: (ino, INODE_ITEM, 0) in the
	// directory's own tree, or (subvolume, ROOT_ITEM, 0 or -1).
	Location ondisk.Key
}

// IsSubvol reports whether the entry links a subvolume.
func (e *Entry) IsSubvol() bool { return e.Location.Type == ondisk.RootItemKey }

// Target is the inode the entry names: the root directory of a linked
// subvolume, or an inode in the directory's own tree.
func (e *Entry) Target(dirRoot ondisk.ObjectID) ondisk.InodeRef {
	if e.IsSubvol() {
		return ondisk.InodeRef{Root: e.Location.ObjectID, Ino: RootDirIno}
	}
	return ondisk.InodeRef{Root: dirRoot, Ino: e.Location.ObjectID}
}

func dirItemKey(dir ondisk.ObjectID, name []byte) ondisk.Key {
	return ondisk.Key{ObjectID: dir, Type: ondisk.DirItemKey, Offset: item.NameHash(name)}
}

func dirIndexKey(dir ondisk.ObjectID, index uint64) ondisk.Key {
	return ondisk.Key{ObjectID: dir, Type: ondisk.DirIndexKey, Offset: index}
}

// lookupEntry finds name in dir (internal/inode's lookup: the DIR_ITEM
// name hash, DIR_INDEX when that item is damaged, malformed entries never
// match). The index is filled from the DIR_INDEX side by the callers that
// need it (refs carry it). mirrors btrfs_lookup_dir_item
func (o *op) lookupEntry(dir ondisk.InodeRef, name string) (*Entry, error) {
	t, err := o.tree(dir.Root)
	if err != nil {
		return nil, err
	}
	e, err := inode.Lookup(t, dir.Ino, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, missf(syscall.ENOENT, "lookup %q in %v", name, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("lookup %q in %v: %w", name, dir, err)
	}
	return &Entry{Name: name, Type: e.Type, Location: e.Location}, nil
}

// nextDirIndex hands out the next DIR_INDEX of a directory: one past the
// highest existing index, at least 2. mirrors btrfs_set_inode_index
func (o *op) nextDirIndex(dir ondisk.InodeRef) (uint64, error) {
	if err := o.noteDirIndex(dir); err != nil {
		return 0, err
	}
	n := o.f.nextIndex[dir]
	o.f.nextIndex[dir] = n + 1
	return n, nil
}

// noteDirIndex makes sure the next DIR_INDEX of dir is known, from the
// highest index in the tree. Called before an entry is removed too, so a
// new name never gets the index of a name the last commit has (the log
// tree's replay relies on that, as the kernel's does: its index counter
// starts from the directory as it was read). mirrors btrfs_inode_delayed_dir_index_count
func (o *op) noteDirIndex(dir ondisk.InodeRef) error {
	f := o.f
	if _, ok := f.nextIndex[dir]; ok {
		return nil
	}
	t, err := o.tree(dir.Root)
	if err != nil {
		return err
	}
	next := uint64(2)
	p, ok, err := t.SearchBackward(dirIndexKey(dir.Ino, ^uint64(0)))
	if err != nil {
		return fmt.Errorf("dir %v: last index: %w", dir, err)
	}
	if ok {
		if k := p.Key(); k.ObjectID == dir.Ino && k.Type == ondisk.DirIndexKey {
			next = max(next, k.Offset+1)
		}
	}
	f.nextIndex[dir] = next
	return nil
}

// insertDirEntries writes the DIR_ITEM (joining an item of colliding names)
// and the DIR_INDEX of a new name. mirrors btrfs_insert_dir_item
func (o *op) insertDirEntries(dir ondisk.InodeRef, e *Entry) error {
	t, err := o.tree(dir.Root)
	if err != nil {
		return err
	}
	d := item.DirItem{Location: e.Location, Transid: o.transid, Type: e.Type, Name: []byte(e.Name)}
	key := dirItemKey(dir.Ino, d.Name)
	old, ok, err := t.Lookup(key)
	if err != nil {
		return fmt.Errorf("insert %q in %v: %w", e.Name, dir, err)
	}
	buf := d.Bytes()
	if ok {
		if len(old)+len(buf) > o.f.maxItemSize() {
			return errf(syscall.EOVERFLOW, "insert %q in %v: too many names with the same hash", e.Name, dir)
		}
		err = t.UpdateItem(o.a, key, append(append([]byte(nil), old...), buf...))
	} else {
		err = t.InsertItem(o.a, key, buf)
	}
	if err != nil {
		return fmt.Errorf("insert dir item %q in %v: %w", e.Name, dir, err)
	}
	o.f.logWriter().DirIndexChanged(dir, e.Index)
	if err := t.InsertItem(o.a, dirIndexKey(dir.Ino, e.Index), buf); err != nil {
		return fmt.Errorf("insert dir index %d (%q) in %v: %w", e.Index, e.Name, dir, err)
	}
	return nil
}

// deleteDirEntries removes name's DIR_ITEM entry and its DIR_INDEX.
// mirrors btrfs_delete_one_dir_name and btrfs_delete_delayed_dir_index
func (o *op) deleteDirEntries(dir ondisk.InodeRef, name string, index uint64) error {
	if err := o.noteDirIndex(dir); err != nil {
		return err
	}
	t, err := o.tree(dir.Root)
	if err != nil {
		return err
	}
	if err := o.deleteNamed(t, dirItemKey(dir.Ino, []byte(name)), name); err != nil {
		return fmt.Errorf("delete dir item %q in %v: %w", name, dir, err)
	}
	o.f.logWriter().DirIndexChanged(dir, index)
	if err := t.DeleteItem(o.a, dirIndexKey(dir.Ino, index)); err != nil {
		return fmt.Errorf("delete dir index %d (%q) in %v: %w", index, name, dir, err)
	}
	return nil
}

// readDir calls fn for each entry of dir in index order until fn returns false.
func (o *op) readDir(dir ondisk.InodeRef, fn func(Entry) bool) error {
	t, err := o.tree(dir.Root)
	if err != nil {
		return err
	}
	var derr error
	err = t.Range(dirIndexKey(dir.Ino, 0), dirIndexKey(dir.Ino, ^uint64(0)), func(k ondisk.Key, data []byte) bool {
		d, _, err := item.DecodeDirItem(data)
		if err != nil {
			derr = corruptf("dir %v index %d: %w", dir, k.Offset, err)
			return false
		}
		return fn(Entry{Name: string(d.Name), Index: k.Offset, Type: d.Type, Location: d.Location})
	})
	if err != nil {
		return fmt.Errorf("read dir %v: %w", dir, err)
	}
	return derr
}

// dirEmpty reports whether dir has no entries.
func (o *op) dirEmpty(dir ondisk.InodeRef) (bool, error) {
	empty := true
	err := o.readDir(dir, func(Entry) bool { empty = false; return false })
	return empty, err
}

// deleteNamed removes the entry called name from a DIR_ITEM or XATTR_ITEM
// item, deleting the item when it was the last. ENOENT if absent.
func (o *op) deleteNamed(t *ctree.Tree, key ondisk.Key, name string) error {
	data, ok, err := t.Lookup(key)
	if err != nil {
		return err
	}
	if !ok {
		return errf(syscall.ENOENT, "%q", name)
	}
	ds, err := item.DecodeDirItems(data)
	if err != nil {
		return corruptf("item %v: %w", key, err)
	}
	var rest item.DirItems
	found := false
	for _, d := range ds {
		if !found && bytes.Equal(d.Name, []byte(name)) {
			found = true
			continue
		}
		rest = append(rest, d)
	}
	if !found {
		return errf(syscall.ENOENT, "%q", name)
	}
	if len(rest) == 0 {
		return t.DeleteItem(o.a, key)
	}
	return t.UpdateItem(o.a, key, rest.Bytes())
}
