package treelog

import (
	"errors"
	"sort"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// fixup recounts what replay may have changed for every touched inode: the
// link count from its refs (an orphan item when none is left, so that the
// next mount deletes it), a directory's size from its index items and a
// file's nbytes from its extents. mirrors fixup_inode_link_counts
func (s *subvol) fixup() error {
	inos := make([]ondisk.ObjectID, 0, len(s.fix))
	for ino := range s.fix {
		inos = append(inos, ino)
	}
	sort.Slice(inos, func(i, j int) bool { return inos[i] < inos[j] })
	for _, ino := range inos {
		if err := s.fixupInode(ino); err != nil {
			return err
		}
	}
	return nil
}

func (s *subvol) fixupInode(ino ondisk.ObjectID) error {
	x, ok, err := s.inode(ino)
	if err != nil || !ok {
		return err
	}
	old := x
	links, err := s.countLinks(ino)
	if err != nil {
		return err
	}
	if x.Mode&item.SIFMT == item.SIFDIR {
		x.NLink = uint32(min(links, 1))
		if x.Size, err = s.dirSize(ino); err != nil {
			return err
		}
	} else {
		x.NLink = uint32(links)
		if x.NBytes, err = s.nbytes(ino); err != nil {
			return err
		}
	}
	if x.NLink == 0 {
		orphan := ondisk.Key{ObjectID: ondisk.OrphanObjectID, Type: ondisk.OrphanItemKey, Offset: uint64(ino)}
		if err := s.t.PutItem(s.r.a, orphan, nil); err != nil {
			return s.errorf("orphan item of inode %d: %w", ino, err)
		}
	}
	if x == old {
		return nil
	}
	if err := s.t.UpdateItem(s.r.a, inodeKey(ino), x.Bytes()); err != nil {
		return s.errorf("update inode %d: %w", ino, err)
	}
	return nil
}

// countLinks counts the names in ino's INODE_REF and INODE_EXTREF items.
// mirrors count_inode_refs / count_inode_extrefs
func (s *subvol) countLinks(ino ondisk.ObjectID) (int, error) {
	n := 0
	var derr error
	err := s.t.Range(ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey},
		ondisk.Key{ObjectID: ino, Type: ondisk.InodeExtrefKey, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			switch k.Type {
			case ondisk.InodeRefKey:
				rs, err := item.DecodeInodeRefs(data)
				derr = err
				n += len(rs)
			case ondisk.InodeExtrefKey:
				es, err := item.DecodeInodeExtrefs(data)
				derr = err
				n += len(es)
			}
			return derr == nil
		})
	if derr != nil {
		derr = s.errorf("refs of inode %d: %w", ino, corrupt(derr))
	}
	return n, errors.Join(err, derr)
}

// dirSize is a directory's i_size: twice the length of every name.
func (s *subvol) dirSize(dir ondisk.ObjectID) (uint64, error) {
	var size uint64
	var derr error
	err := s.t.Range(dirIndexKey(dir, 0), dirIndexKey(dir, ^uint64(0)), func(k ondisk.Key, data []byte) bool {
		ds, err := dirEntries(data)
		if err != nil {
			derr = s.errorf("dir index %v: %w", k, err)
			return false
		}
		for _, d := range ds {
			size += 2 * uint64(len(d.Name))
		}
		return true
	})
	return size, errors.Join(err, derr)
}

// nbytes is the bytes a file's extents hold: inline ram bytes and the
// referenced part of every non-hole extent.
func (s *subvol) nbytes(ino ondisk.ObjectID) (uint64, error) {
	var n uint64
	var derr error
	err := s.t.Range(extentKey(ino, 0), extentKey(ino, ^uint64(0)), func(k ondisk.Key, data []byte) bool {
		fe, err := item.DecodeFileExtentItem(data)
		if err != nil {
			derr = s.errorf("file extent %v: %w", k, corrupt(err))
			return false
		}
		switch {
		case fe.IsInline():
			n += fe.RAMBytes
		case fe.DiskBytenr != 0:
			n += fe.NumBytes
		}
		return true
	})
	return n, errors.Join(err, derr)
}
