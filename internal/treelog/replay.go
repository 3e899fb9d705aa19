package treelog

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/txn"
)

// replayer is one replay: the transaction handle and what all logs share.
type replayer struct {
	h       *txn.Handle
	a       ctree.Allocator
	ss      uint64 // sector size
	noHoles bool
	claimed map[ondisk.LogicalAddr]bool // data extents given extent items by this replay
}

// Replay replays every log tree of f's image into the subvolume trees,
// clears the log root and commits. It is what txn.OpenOptions.ReplayLog
// takes. mirrors btrfs_recover_log_trees
func Replay(f *txn.Engine) error {
	logs, err := Read(f.Info)
	if err != nil || logs == nil {
		return err
	}
	h, err := f.Begin()
	if err != nil {
		return err
	}
	if err := replay(h, f.Info.Super, logs); err != nil {
		h.End()
		return err
	}
	return h.Commit()
}

func replay(h *txn.Handle, sb *ondisk.Superblock, logs *Logs) error {
	r := &replayer{h: h, a: h.Alloc(), ss: uint64(sb.SectorSize),
		noHoles: sb.IncompatFlags&ondisk.IncompatNoHoles != 0, claimed: map[ondisk.LogicalAddr]bool{}}
	// Stage 0: keep the log's blocks and new data from being allocated.
	// mirrors LOG_WALK_PIN_ONLY
	for _, a := range logs.Blocks {
		if err := h.PinLogBlock(a); err != nil {
			return err
		}
	}
	var subs []*subvol
	for _, l := range logs.Subvols {
		t, err := h.Tree(l.Subvol)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the subvolume was deleted: its log has nothing to replay into
		}
		if err != nil {
			return err
		}
		s := &subvol{r: r, log: l, id: l.Subvol, t: t,
			fix: map[ondisk.ObjectID]bool{}, ignore: map[ondisk.ObjectID]bool{}}
		if err := s.claimData(); err != nil {
			return err
		}
		subs = append(subs, s)
	}
	stages := []struct {
		name string
		run  func(*subvol) error
	}{
		{"inodes", (*subvol).replayInodes},
		{"dir index", (*subvol).replayDirIndex},
		{"refs, xattrs and extents", (*subvol).replayRest},
		{"link count fixup", (*subvol).fixup},
	}
	for _, st := range stages {
		for _, s := range subs {
			if err := st.run(s); err != nil {
				return fmt.Errorf("replay log of subvolume %d (%s): %w", s.id, st.name, err)
			}
		}
	}
	// The log is replayed: its blocks are free once this commits.
	for _, a := range logs.Blocks {
		if err := h.ReleaseLogBlock(a); err != nil {
			return err
		}
	}
	w := h.Super()
	w.LogRoot, w.LogRootLevel, w.LogRootTransid = 0, 0, 0
	return nil
}

// claimData reserves the data extents the log references that have no
// extent item yet (written in the transaction the crash lost).
// mirrors btrfs_exclude_logged_extents
func (s *subvol) claimData() error {
	for _, it := range s.log.Items {
		if err := s.checkKey(it.Key); err != nil {
			return err
		}
		if it.Key.Type != ondisk.ExtentDataKey {
			continue
		}
		fe, err := item.DecodeFileExtentItem(it.Data)
		if err != nil {
			return s.errorf("log item %v: %w", it.Key, corrupt(err))
		}
		if fe.IsInline() || fe.DiskBytenr == 0 || s.r.claimed[fe.DiskBytenr] {
			continue
		}
		refs, err := s.r.h.ExtentRefs(fe.DiskBytenr)
		if err != nil {
			return err
		}
		if refs > 0 {
			continue
		}
		if err := s.r.h.ClaimLoggedData(fe.DiskBytenr, fe.DiskNumBytes); err != nil {
			return s.errorf("log item %v: %w", it.Key, err)
		}
		s.r.claimed[fe.DiskBytenr] = true
	}
	return nil
}

// replayInodes is stage 1. mirrors replay_one_buffer (LOG_WALK_REPLAY_INODES)
func (s *subvol) replayInodes() error {
	for _, it := range s.log.Items {
		if it.Key.Type != ondisk.InodeItemKey {
			continue
		}
		ino := it.Key.ObjectID
		x, err := item.DecodeInodeItem(it.Data)
		if err != nil {
			return s.errorf("log inode %d: %w", ino, corrupt(err))
		}
		if x.NLink == 0 {
			s.ignore[ino] = true
			continue
		}
		if err := s.xattrDeletes(ino); err != nil {
			return err
		}
		if x.Mode&item.SIFMT == item.SIFDIR {
			if err := s.dirDeletes(ino); err != nil {
				return err
			}
		}
		if err := s.t.PutItem(s.r.a, it.Key, it.Data); err != nil {
			return s.errorf("copy inode %d: %w", ino, err)
		}
		if x.Mode&item.SIFMT == item.SIFREG {
			from := (x.Size + s.r.ss - 1) / s.r.ss * s.r.ss
			if err := s.dropExtents(ino, from, ^uint64(0)); err != nil {
				return s.errorf("truncate inode %d to %d: %w", ino, x.Size, err)
			}
		}
		s.fix[ino] = true
	}
	return nil
}

// xattrDeletes removes the xattrs of ino the log does not hold.
// mirrors replay_xattr_deletes
func (s *subvol) xattrDeletes(ino ondisk.ObjectID) error {
	type victim struct {
		key ondisk.Key
		nm  []byte
	}
	var vs []victim
	var derr error
	err := s.t.Range(ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey},
		ondisk.Key{ObjectID: ino, Type: ondisk.XattrItemKey, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			ds, err := dirEntries(data)
			if err != nil {
				derr = s.errorf("xattr item %v: %w", k, err)
				return false
			}
			logged, _ := s.log.find(k)
			for _, d := range ds {
				if !hasEntry(logged, d.Name) {
					vs = append(vs, victim{k, d.Name})
				}
			}
			return true
		})
	if err = errors.Join(err, derr); err != nil {
		return err
	}
	for _, v := range vs {
		if err := s.removeEntry(v.key, v.nm); err != nil {
			return s.errorf("delete xattr %q of inode %d: %w", v.nm, ino, err)
		}
	}
	return nil
}

// hasEntry reports whether the dir/xattr item data holds an entry nm.
func hasEntry(data []byte, nm []byte) bool {
	if data == nil {
		return false
	}
	ds, err := item.DecodeDirItems(data)
	if err != nil {
		return false
	}
	for _, d := range ds {
		if string(d.Name) == string(nm) {
			return true
		}
	}
	return false
}

// dirDeletes unlinks every name of directory dir inside a logged
// DIR_LOG_INDEX range that the log does not hold.
// mirrors replay_dir_deletes / check_item_in_log
func (s *subvol) dirDeletes(dir ondisk.ObjectID) error {
	ranges := s.log.between(ondisk.Key{ObjectID: dir, Type: ondisk.DirLogIndexKey},
		ondisk.Key{ObjectID: dir, Type: ondisk.DirLogIndexKey, Offset: ^uint64(0)})
	for _, rg := range ranges {
		dl, err := item.DecodeDirLogItem(rg.Data)
		if err != nil {
			return s.errorf("dir log range %v: %w", rg.Key, corrupt(err))
		}
		type victim struct {
			index uint64
			d     item.DirItem
		}
		var vs []victim
		var derr error
		err = s.t.Range(dirIndexKey(dir, rg.Key.Offset), dirIndexKey(dir, dl.End), func(k ondisk.Key, data []byte) bool {
			ds, err := dirEntries(data)
			if err == nil && len(ds) == 0 {
				err = corrupt(errNoEntries)
			}
			if err != nil {
				derr = s.errorf("dir index %v: %w", k, err)
				return false
			}
			logged, _ := s.log.find(k)
			if !hasEntry(logged, ds[0].Name) {
				vs = append(vs, victim{k.Offset, ds[0]})
			}
			return true
		})
		if err = errors.Join(err, derr); err != nil {
			return err
		}
		for _, v := range vs {
			if err := s.unlink(dir, v.d.Name, v.index, true, v.d.Location); err != nil {
				return err
			}
		}
	}
	return nil
}

// replayDirIndex is stage 2. mirrors replay_one_dir_item / replay_one_name
func (s *subvol) replayDirIndex() error {
	for _, it := range s.log.Items {
		if it.Key.Type != ondisk.DirIndexKey || s.ignore[it.Key.ObjectID] {
			continue
		}
		if err := s.replayName(it); err != nil {
			return err
		}
	}
	return nil
}

func (s *subvol) replayName(it Item) error {
	dir, index := it.Key.ObjectID, it.Key.Offset
	ds, err := dirEntries(it.Data)
	if err != nil {
		return s.errorf("log dir index %v: %w", it.Key, err)
	}
	if len(ds) != 1 {
		return s.errorf("log dir index %v: %w", it.Key, corrupt(fmt.Errorf("%d entries", len(ds))))
	}
	d := ds[0]
	if d.Location.Type != ondisk.InodeItemKey {
		return nil
	}
	if ok, err := s.exists(dir); err != nil || !ok {
		return err
	}
	dirMatch, indexMatch := false, false
	if e, err := s.entryIn(dirItemKey(dir, d.Name), d.Name); err != nil {
		return err
	} else if e != nil {
		if e.Location == d.Location {
			dirMatch = true
		} else if err := s.unlink(dir, e.Name, 0, false, e.Location); err != nil {
			return err
		}
	}
	if b, ok, err := s.t.Lookup(dirIndexKey(dir, index)); err != nil {
		return err
	} else if ok {
		es, err := dirEntries(b)
		if err == nil && len(es) == 0 {
			err = corrupt(errNoEntries)
		}
		if err != nil {
			return s.errorf("dir index %v: %w", dirIndexKey(dir, index), err)
		}
		e := es[0]
		if e.Location == d.Location && string(e.Name) == string(d.Name) {
			indexMatch = true
		} else if err := s.unlink(dir, e.Name, index, true, e.Location); err != nil {
			return err
		}
	}
	if dirMatch || indexMatch {
		return nil // the name exists (with another index: left as the kernel leaves it)
	}
	// The target's logged refs add the name in stage 3.
	if s.loggedRef(d.Location.ObjectID, dir, d.Name) {
		return nil
	}
	if ok, err := s.exists(d.Location.ObjectID); err != nil || !ok {
		return err
	}
	return s.link(dir, d.Name, index, d.Location.ObjectID, item.FTType(d.Type), true)
}

// loggedRef reports whether the log holds the link (parent, nm) of ino.
// mirrors backref_in_log
func (s *subvol) loggedRef(ino, parent ondisk.ObjectID, nm []byte) bool {
	if b, ok := s.log.find(inodeRefKey(ino, parent)); ok {
		if rs, err := item.DecodeInodeRefs(b); err == nil {
			for _, r := range rs {
				if string(r.Name) == string(nm) {
					return true
				}
			}
		}
	}
	if b, ok := s.log.find(extrefKey(ino, parent, nm)); ok {
		if es, err := item.DecodeInodeExtrefs(b); err == nil {
			for _, e := range es {
				if e.Parent == parent && string(e.Name) == string(nm) {
					return true
				}
			}
		}
	}
	return false
}

// replayRest is stage 3. mirrors replay_one_buffer (LOG_WALK_REPLAY_ALL)
func (s *subvol) replayRest() error {
	for _, it := range s.log.Items {
		if s.ignore[it.Key.ObjectID] {
			continue
		}
		var err error
		switch it.Key.Type {
		case ondisk.XattrItemKey:
			if ok, e := s.exists(it.Key.ObjectID); e != nil || !ok {
				err = e
				break
			}
			err = s.t.PutItem(s.r.a, it.Key, it.Data)
		case ondisk.InodeRefKey:
			err = s.replayRef(it)
		case ondisk.InodeExtrefKey:
			err = s.replayExtref(it)
		case ondisk.ExtentDataKey:
			err = s.replayExtent(it)
		}
		if err != nil {
			return fmt.Errorf("log item %v: %w", it.Key, err)
		}
	}
	return nil
}

// checkKey refuses log items that would write outside the inodes of the
// subvolume: every item kind replay copies names an inode.
func (s *subvol) checkKey(k ondisk.Key) error {
	switch k.Type {
	case ondisk.InodeItemKey, ondisk.InodeRefKey, ondisk.InodeExtrefKey, ondisk.XattrItemKey,
		ondisk.ExtentDataKey, ondisk.DirIndexKey, ondisk.DirLogIndexKey:
		if k.ObjectID < ondisk.FirstFreeObjectID || k.ObjectID > ondisk.LastFreeObjectID {
			return s.errorf("log item %v: %w", k, corrupt(errString("not an inode number")))
		}
	case ondisk.ExtentCsumKey:
		if k.ObjectID != ondisk.ExtentCsumObjectID {
			return s.errorf("log item %v: %w", k, corrupt(errString("checksum item outside the checksum objectid")))
		}
	}
	return nil
}
