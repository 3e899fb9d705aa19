package treelog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Keys of the subvolume items replay touches.
func inodeKey(ino ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.InodeItemKey}
}
func dirItemKey(dir ondisk.ObjectID, name []byte) ondisk.Key {
	return ondisk.Key{ObjectID: dir, Type: ondisk.DirItemKey, Offset: item.NameHash(name)}
}
func dirIndexKey(dir ondisk.ObjectID, index uint64) ondisk.Key {
	return ondisk.Key{ObjectID: dir, Type: ondisk.DirIndexKey, Offset: index}
}
func inodeRefKey(ino, parent ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey, Offset: uint64(parent)}
}
func extrefKey(ino, parent ondisk.ObjectID, name []byte) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.InodeExtrefKey, Offset: item.ExtrefHash(parent, name)}
}

// name is one link of an inode: a name in directory parent at index.
type name struct {
	parent ondisk.ObjectID
	name   []byte
	index  uint64
}

// subvol is the replay of one log into its subvolume tree.
type subvol struct {
	r   *replayer
	log *Log
	id  ondisk.ObjectID
	t   *ctree.Tree
	// fix holds the inodes whose link count, size and nbytes are recounted
	// at the end. mirrors link_to_fixup_dir
	fix map[ondisk.ObjectID]bool
	// ignore holds inodes whose logged inode item has no links (a tmpfile
	// or an inode unlinked after its fsync): their items are not replayed.
	ignore map[ondisk.ObjectID]bool
}

func (s *subvol) errorf(format string, args ...any) error {
	return fmt.Errorf("subvolume %d: "+format, append([]any{s.id}, args...)...)
}

// inode reads inode ino of the subvolume; ok is false if it does not exist.
func (s *subvol) inode(ino ondisk.ObjectID) (item.InodeItem, bool, error) {
	b, ok, err := s.t.Lookup(inodeKey(ino))
	if err != nil || !ok {
		return item.InodeItem{}, false, err
	}
	x, err := item.DecodeInodeItem(b)
	if err != nil {
		return x, false, s.errorf("inode %d: %w", ino, corrupt(err))
	}
	return x, true, nil
}

// errNoEntries: a DIR_ITEM/DIR_INDEX item that holds no entry.
var errNoEntries = errors.New("item holds no entries")

// dirEntries decodes the entries of a DIR_ITEM/DIR_INDEX/XATTR item.
func dirEntries(data []byte) (item.DirItems, error) {
	ds, err := item.DecodeDirItems(data)
	if err != nil {
		return nil, corrupt(err)
	}
	return ds, nil
}

// entryIn returns the entry called nm in the subvolume item at key.
func (s *subvol) entryIn(key ondisk.Key, nm []byte) (*item.DirItem, error) {
	b, ok, err := s.t.Lookup(key)
	if err != nil || !ok {
		return nil, err
	}
	ds, err := dirEntries(b)
	if err != nil {
		return nil, s.errorf("item %v: %w", key, err)
	}
	for i := range ds {
		if bytes.Equal(ds[i].Name, nm) {
			return &ds[i], nil
		}
	}
	return nil, nil
}

// removeEntry deletes the entry nm from the DIR_ITEM/XATTR item at key
// (the whole item when it was the only one). mirrors btrfs_delete_one_dir_name
func (s *subvol) removeEntry(key ondisk.Key, nm []byte) error {
	b, ok, err := s.t.Lookup(key)
	if err != nil || !ok {
		return err
	}
	ds, err := dirEntries(b)
	if err != nil {
		return s.errorf("item %v: %w", key, err)
	}
	keep := ds[:0]
	for _, d := range ds {
		if !bytes.Equal(d.Name, nm) {
			keep = append(keep, d)
		}
	}
	if len(keep) == len(ds) {
		return nil
	}
	if len(keep) == 0 {
		return s.t.DeleteItem(s.r.a, key)
	}
	return s.t.UpdateItem(s.r.a, key, keep.Bytes())
}

// appendEntry adds d to the DIR_ITEM at key (joining names with the same hash).
func (s *subvol) appendEntry(key ondisk.Key, d item.DirItem) error {
	b, ok, err := s.t.Lookup(key)
	if err != nil {
		return err
	}
	if !ok {
		return s.t.InsertItem(s.r.a, key, d.Bytes())
	}
	return s.t.UpdateItem(s.r.a, key, append(b, d.Bytes()...))
}

// names returns the links of ino in directory parent (INODE_REF and
// INODE_EXTREF items).
func (s *subvol) names(ino, parent ondisk.ObjectID) ([]name, error) {
	var out []name
	b, ok, err := s.t.Lookup(inodeRefKey(ino, parent))
	if err != nil {
		return nil, err
	}
	if ok {
		rs, err := item.DecodeInodeRefs(b)
		if err != nil {
			return nil, s.errorf("inode ref %d in %d: %w", ino, parent, corrupt(err))
		}
		for _, r := range rs {
			out = append(out, name{parent: parent, name: r.Name, index: r.Index})
		}
	}
	var derr error
	err = s.t.Range(ondisk.Key{ObjectID: ino, Type: ondisk.InodeExtrefKey},
		ondisk.Key{ObjectID: ino, Type: ondisk.InodeExtrefKey, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			es, err := item.DecodeInodeExtrefs(data)
			if err != nil {
				derr = s.errorf("inode extref %v: %w", k, corrupt(err))
				return false
			}
			for _, e := range es {
				if e.Parent == parent {
					out = append(out, name{parent: parent, name: e.Name, index: e.Index})
				}
			}
			return true
		})
	return out, errors.Join(err, derr)
}

// removeRef deletes the link (parent, nm) from ino's INODE_REF or EXTREF.
func (s *subvol) removeRef(ino, parent ondisk.ObjectID, nm []byte) error {
	key := inodeRefKey(ino, parent)
	b, ok, err := s.t.Lookup(key)
	if err != nil {
		return err
	}
	if ok {
		rs, err := item.DecodeInodeRefs(b)
		if err != nil {
			return s.errorf("inode ref %v: %w", key, corrupt(err))
		}
		keep := rs[:0]
		for _, r := range rs {
			if !bytes.Equal(r.Name, nm) {
				keep = append(keep, r)
			}
		}
		if len(keep) != len(rs) {
			if len(keep) == 0 {
				return s.t.DeleteItem(s.r.a, key)
			}
			return s.t.UpdateItem(s.r.a, key, keep.Bytes())
		}
	}
	key = extrefKey(ino, parent, nm)
	b, ok, err = s.t.Lookup(key)
	if err != nil || !ok {
		return err
	}
	es, err := item.DecodeInodeExtrefs(b)
	if err != nil {
		return s.errorf("inode extref %v: %w", key, corrupt(err))
	}
	keep := es[:0]
	for _, e := range es {
		if e.Parent != parent || !bytes.Equal(e.Name, nm) {
			keep = append(keep, e)
		}
	}
	if len(keep) == len(es) {
		return nil
	}
	if len(keep) == 0 {
		return s.t.DeleteItem(s.r.a, key)
	}
	return s.t.UpdateItem(s.r.a, key, keep.Bytes())
}

// addRef adds the link (parent, nm, index) to ino's INODE_REF item.
func (s *subvol) addRef(ino, parent ondisk.ObjectID, nm []byte, index uint64) error {
	key := inodeRefKey(ino, parent)
	r := item.InodeRef{Index: index, Name: nm}
	b, ok, err := s.t.Lookup(key)
	if err != nil {
		return err
	}
	if !ok {
		return s.t.InsertItem(s.r.a, key, item.InodeRefs{r}.Bytes())
	}
	return s.t.UpdateItem(s.r.a, key, append(b, item.InodeRefs{r}.Bytes()...))
}

// indexOf finds the DIR_INDEX of the link (dir, nm) -> target: from the
// target's ref when it has one, else by scanning the directory.
func (s *subvol) indexOf(dir ondisk.ObjectID, nm []byte, target ondisk.Key) (uint64, bool, error) {
	if target.Type == ondisk.InodeItemKey {
		ns, err := s.names(target.ObjectID, dir)
		if err != nil {
			return 0, false, err
		}
		for _, n := range ns {
			if bytes.Equal(n.name, nm) {
				return n.index, true, nil
			}
		}
	}
	var idx uint64
	found := false
	err := s.t.Range(dirIndexKey(dir, 0), dirIndexKey(dir, ^uint64(0)), func(k ondisk.Key, data []byte) bool {
		ds, err := dirEntries(data)
		if err == nil && len(ds) > 0 && bytes.Equal(ds[0].Name, nm) && ds[0].Location == target {
			idx, found = k.Offset, true
			return false
		}
		return true
	})
	return idx, found, err
}

// unlink removes the name nm (at index) of target from dir: its DIR_ITEM
// entry, its DIR_INDEX and the target's back reference. Both inodes are
// recounted at the end. mirrors drop_one_dir_item / btrfs_unlink_inode
func (s *subvol) unlink(dir ondisk.ObjectID, nm []byte, index uint64, haveIndex bool, target ondisk.Key) error {
	if target.Type != ondisk.InodeItemKey {
		return nil // a subvolume link: the log never describes those
	}
	if !haveIndex {
		var err error
		if index, haveIndex, err = s.indexOf(dir, nm, target); err != nil {
			return err
		}
	}
	if err := s.removeEntry(dirItemKey(dir, nm), nm); err != nil {
		return s.errorf("unlink %q from directory %d: %w", nm, dir, err)
	}
	if haveIndex {
		if d, err := s.entryIn(dirIndexKey(dir, index), nm); err != nil {
			return err
		} else if d != nil {
			if err := s.t.DeleteItem(s.r.a, dirIndexKey(dir, index)); err != nil {
				return s.errorf("unlink %q from directory %d: %w", nm, dir, err)
			}
		}
	}
	if err := s.removeRef(target.ObjectID, dir, nm); err != nil {
		return s.errorf("unlink %q from directory %d: inode %d: %w", nm, dir, target.ObjectID, err)
	}
	s.fix[dir], s.fix[target.ObjectID] = true, true
	return nil
}

// link adds the name nm of inode ino in dir at index (DIR_ITEM and
// DIR_INDEX; the back reference too when backref). mirrors btrfs_add_link
func (s *subvol) link(dir ondisk.ObjectID, nm []byte, index uint64, ino ondisk.ObjectID, ftype uint8, backref bool) error {
	d := item.DirItem{Location: inodeKey(ino), Transid: uint64(s.r.h.Transid()), Type: ftype, Name: nm}
	if err := s.appendEntry(dirItemKey(dir, nm), d); err != nil {
		return s.errorf("link %q (inode %d) in directory %d: %w", nm, ino, dir, err)
	}
	if err := s.t.PutItem(s.r.a, dirIndexKey(dir, index), d.Bytes()); err != nil {
		return s.errorf("link %q (inode %d) in directory %d: %w", nm, ino, dir, err)
	}
	if backref {
		if err := s.addRef(ino, dir, nm, index); err != nil {
			return s.errorf("link %q (inode %d) in directory %d: %w", nm, ino, dir, err)
		}
	}
	s.fix[dir], s.fix[ino] = true, true
	return nil
}

// exists reports whether inode ino exists in the subvolume.
func (s *subvol) exists(ino ondisk.ObjectID) (bool, error) {
	_, ok, err := s.t.Lookup(inodeKey(ino))
	return ok, err
}
