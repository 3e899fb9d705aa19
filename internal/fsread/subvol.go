package fsread

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Subvolume describes one subvolume or snapshot.
type Subvolume struct {
	ID       uint64
	ParentID uint64 // subvolume holding the link to it; 0 for the top level
	DirID    uint64 // directory inode in the parent holding the link
	// Path is relative to the top-level subvolume ("" for the top level
	// itself), like `btrfs subvolume list`.
	Path         string
	UUID         UUID
	ParentUUID   UUID // source of a snapshot
	ReceivedUUID UUID
	ReadOnly     bool
	Generation   uint64 // last transaction that changed it
	Otransid     uint64 // transaction that created it
	Otime        time.Time
	Ctime        time.Time
	// RootOffset is the offset of the ROOT_ITEM key: the transaction a
	// snapshot was taken in, 0 for a subvolume created empty (what
	// `btrfs subvolume list -s` tells snapshots by).
	RootOffset uint64
	// Ctransid, Stransid and Rtransid are the transactions of the last
	// change, send and receive; Stime and Rtime the times of the last
	// send and receive (zero when never).
	Ctransid, Stransid, Rtransid uint64
	Stime, Rtime                 time.Time

	name string // last path component, from the ROOT_BACKREF
}

// UUID is a 16-byte identifier.
type UUID [16]byte

func (u UUID) String() string {
	if u == (UUID{}) {
		return "-"
	}
	return ondisk.UUID(u).String()
}

// isSubvolID reports whether a ROOT_ITEM objectid is a subvolume (fs tree 5
// or an id in [256, LAST_FREE]).
func isSubvolID(id ondisk.ObjectID) bool {
	return id == ondisk.FSTreeObjectID || id >= ondisk.FirstFreeObjectID && id <= ondisk.LastFreeObjectID
}

// Subvolumes lists every subvolume, top level first, then by ID.
func (f *Engine) Subvolumes() ([]Subvolume, error) {
	var out []Subvolume
	var derr error
	lo := ondisk.Key{ObjectID: ondisk.FSTreeObjectID, Type: ondisk.RootItemKey}
	err := f.info.RootTree.Range(lo, ondisk.Key{ObjectID: ondisk.LastFreeObjectID, Type: ondisk.RootItemKey, Offset: ^uint64(0)},
		func(k ondisk.Key, data []byte) bool {
			if k.Type != ondisk.RootItemKey || !isSubvolID(k.ObjectID) {
				return true
			}
			ri, err := item.DecodeRootItem(data)
			if err != nil {
				derr = fmt.Errorf("root item %v: %w", k, err)
				return false
			}
			if ri.Refs == 0 || ri.Flags&item.RootSubvolDead != 0 {
				return true // deleted, waiting for the cleaner
			}
			s := subvolFromRoot(k.ObjectID, &ri)
			s.RootOffset = k.Offset
			out = append(out, s)
			return true
		})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("list subvolumes: %w", err)
	}
	paths := map[uint64]string{uint64(ondisk.FSTreeObjectID): ""}
	for i := range out {
		if err := f.fillSubvolPath(&out[i]); err != nil {
			return nil, err
		}
	}
	for i := range out {
		out[i].Path, err = f.subvolPath(out, paths, out[i].ID, 0)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func subvolFromRoot(id ondisk.ObjectID, ri *item.RootItem) Subvolume {
	s := Subvolume{ID: uint64(id), UUID: UUID(ri.UUID), ParentUUID: UUID(ri.ParentUUID),
		ReceivedUUID: UUID(ri.ReceivedUUID), ReadOnly: ri.Flags&item.RootSubvolRdonly != 0,
		Generation: uint64(ri.Generation), Otransid: ri.Otransid,
		Ctransid: ri.Ctransid, Stransid: ri.Stransid, Rtransid: ri.Rtransid}
	if ri.V2 {
		s.Otime, s.Ctime = ri.Otime.Time(), ri.Ctime.Time()
		if ri.Stime.Sec != 0 || ri.Stime.Nsec != 0 {
			s.Stime = ri.Stime.Time()
		}
		if ri.Rtime.Sec != 0 || ri.Rtime.Nsec != 0 {
			s.Rtime = ri.Rtime.Time()
		}
	}
	return s
}

// fillSubvolPath sets ParentID, DirID and the name from the
// ROOT_BACKREF item.
func (f *Engine) fillSubvolPath(s *Subvolume) error {
	if s.ID == uint64(ondisk.FSTreeObjectID) {
		return nil
	}
	lo := ondisk.Key{ObjectID: ondisk.ObjectID(s.ID), Type: ondisk.RootBackrefKey}
	hi := ondisk.Key{ObjectID: ondisk.ObjectID(s.ID), Type: ondisk.RootBackrefKey, Offset: ^uint64(0)}
	var derr error
	err := f.info.RootTree.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		ref, err := item.DecodeRootRef(data)
		if err != nil {
			derr = fmt.Errorf("root backref %v: %w", k, corruptf("%w", err))
			return false
		}
		s.ParentID, s.DirID, s.name = k.Offset, uint64(ref.DirID), string(ref.Name)
		return false
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("subvolume %d: %w", s.ID, err)
	}
	return nil
}

// subvolPath builds the full path of subvolume id from its parent's path, the
// directory path inside the parent and its name.
func (f *Engine) subvolPath(all []Subvolume, memo map[uint64]string, id uint64, depth int) (string, error) {
	if p, ok := memo[id]; ok {
		return p, nil
	}
	var s *Subvolume
	for i := range all {
		if all[i].ID == id {
			s = &all[i]
		}
	}
	if s == nil || s.ParentID == 0 || depth > 1000 {
		return "", nil // unlinked (orphan) subvolume, or a loop
	}
	parent, err := f.subvolPath(all, memo, s.ParentID, depth+1)
	if err != nil {
		return "", err
	}
	t, err := f.Tree(ondisk.ObjectID(s.ParentID))
	if err != nil {
		return "", fmt.Errorf("subvolume %d: parent %d: %w", id, s.ParentID, err)
	}
	dir, err := inode.Path(t, ondisk.ObjectID(s.DirID), ondisk.FirstFreeObjectID)
	if err != nil {
		return "", fmt.Errorf("subvolume %d: %w", id, err)
	}
	p := path.Join(parent, dir, s.name)
	memo[id] = p
	return p, nil
}

// DefaultSubvolume returns the ID of the subvolume mounted by default: the
// "default" entry of the root tree directory, or 5 (the top level).
// mirrors btrfs_get_default_subvol / the mount-time lookup in btrfs_mount_root
func (f *Engine) DefaultSubvolume() (uint64, error) {
	e, err := inode.Lookup(f.info.RootTree, ondisk.RootTreeDirObjectID, "default")
	if errors.Is(err, fs.ErrNotExist) {
		return uint64(ondisk.FSTreeObjectID), nil
	}
	if err != nil {
		return 0, fmt.Errorf("default subvolume: %w", err)
	}
	if e.Location.Type != ondisk.RootItemKey || !isSubvolID(e.Location.ObjectID) {
		return 0, fmt.Errorf("default subvolume: %w", corruptf("entry points to %v", e.Location))
	}
	return uint64(e.Location.ObjectID), nil
}

// pickRoot chooses the subvolume to open from the options.
func (f *Engine) pickRoot() (ondisk.ObjectID, error) {
	switch {
	case f.opts.SubvolID != 0:
		if !isSubvolID(ondisk.ObjectID(f.opts.SubvolID)) {
			return 0, fmt.Errorf("subvolume id %d: not a subvolume id", f.opts.SubvolID)
		}
		return ondisk.ObjectID(f.opts.SubvolID), nil
	case f.opts.Subvol != "":
		want := strings.Trim(path.Clean("/"+f.opts.Subvol), "/")
		if want == "" {
			return ondisk.FSTreeObjectID, nil
		}
		subs, err := f.Subvolumes()
		if err != nil {
			return 0, err
		}
		for _, s := range subs {
			if s.Path == want {
				return ondisk.ObjectID(s.ID), nil
			}
		}
		return 0, fmt.Errorf("subvolume %q: %w", f.opts.Subvol, fs.ErrNotExist)
	}
	id, err := f.DefaultSubvolume()
	return ondisk.ObjectID(id), err
}
