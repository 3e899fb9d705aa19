package treelog

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// replayRef replays an INODE_REF item: the inode's names in one directory.
// mirrors add_inode_ref
func (s *subvol) replayRef(it Item) error {
	ino, parent := it.Key.ObjectID, ondisk.ObjectID(it.Key.Offset)
	rs, err := item.DecodeInodeRefs(it.Data)
	if err != nil {
		return s.errorf("log inode ref: %w", corrupt(err))
	}
	if parent == ino {
		// The ".." ref of a subvolume's root directory: no entry names it.
		if ok, err := s.exists(ino); err != nil || !ok {
			return err
		}
		return s.t.PutItem(s.r.a, it.Key, it.Data)
	}
	logged := make([]name, len(rs))
	for i, r := range rs {
		logged[i] = name{parent: parent, name: r.Name, index: r.Index}
	}
	ok, err := s.linkNames(ino, parent, logged)
	if err != nil || !ok {
		return err
	}
	// The back reference is the log's. mirrors overwrite_item
	return s.t.PutItem(s.r.a, it.Key, it.Data)
}

// replayExtref replays an INODE_EXTREF item (names of any directories whose
// hash collides).
func (s *subvol) replayExtref(it Item) error {
	ino := it.Key.ObjectID
	es, err := item.DecodeInodeExtrefs(it.Data)
	if err != nil {
		return s.errorf("log inode extref: %w", corrupt(err))
	}
	byParent := map[ondisk.ObjectID][]name{}
	var order []ondisk.ObjectID
	for _, e := range es {
		if _, seen := byParent[e.Parent]; !seen {
			order = append(order, e.Parent)
		}
		byParent[e.Parent] = append(byParent[e.Parent], name{parent: e.Parent, name: e.Name, index: e.Index})
	}
	any := false
	for _, p := range order {
		ok, err := s.linkNames(ino, p, byParent[p])
		if err != nil {
			return err
		}
		any = any || ok
	}
	if !any {
		return nil
	}
	return s.t.PutItem(s.r.a, it.Key, it.Data)
}

// linkNames makes the names of ino in parent exactly the logged ones for
// the names the log lists: names of ino in parent that the log does not
// have are unlinked, conflicting entries (another inode under the name,
// another name at the index) are unlinked, and missing entries are added.
// ok is false when the directory or the inode does not exist (nothing done).
// mirrors __add_inode_ref / unlink_old_inode_refs / inode_in_dir
func (s *subvol) linkNames(ino, parent ondisk.ObjectID, logged []name) (bool, error) {
	x, ok, err := s.inode(ino)
	if err != nil || !ok {
		return false, err
	}
	if ok, err := s.exists(parent); err != nil || !ok {
		return false, err
	}
	have, err := s.names(ino, parent)
	if err != nil {
		return false, err
	}
	for _, h := range have {
		if !hasName(logged, h.name) {
			if err := s.unlink(parent, h.name, h.index, true, inodeKey(ino)); err != nil {
				return false, err
			}
		}
	}
	ftype := item.FTFromMode(x.Mode)
	for _, l := range logged {
		indexOK := false
		if b, ok, err := s.t.Lookup(dirIndexKey(parent, l.index)); err != nil {
			return false, err
		} else if ok {
			es, err := dirEntries(b)
			if err != nil || len(es) == 0 {
				return false, s.errorf("dir index %v: %w", dirIndexKey(parent, l.index), corrupt(errOf(err)))
			}
			if es[0].Location == inodeKey(ino) && string(es[0].Name) == string(l.name) {
				indexOK = true
			} else if err := s.unlink(parent, es[0].Name, l.index, true, es[0].Location); err != nil {
				return false, err
			}
		}
		e, err := s.entryIn(dirItemKey(parent, l.name), l.name)
		if err != nil {
			return false, err
		}
		if e != nil && indexOK && e.Location == inodeKey(ino) {
			continue // already linked
		}
		if e != nil {
			// Another inode, or this one at another index: remove that
			// entry (and its ref; the log's ref is written after).
			if err := s.unlink(parent, e.Name, 0, false, e.Location); err != nil {
				return false, err
			}
		}
		if indexOK {
			if err := s.t.DeleteItem(s.r.a, dirIndexKey(parent, l.index)); err != nil {
				return false, err
			}
		}
		if err := s.link(parent, l.name, l.index, ino, ftype, false); err != nil {
			return false, err
		}
	}
	s.fix[ino] = true
	return true, nil
}

func hasName(ns []name, nm []byte) bool {
	for _, n := range ns {
		if string(n.name) == string(nm) {
			return true
		}
	}
	return false
}

type errString string

func (e errString) Error() string { return string(e) }

// errOf gives a non-nil error for corrupt() when a decoder found nothing wrong
// but the item was empty.
func errOf(err error) error {
	if err != nil {
		return err
	}
	return errString("empty item")
}
