package scrub

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// maxFileRefs bounds the files named for one bad sector (an extent shared
// by many snapshots and reflinks).
const maxFileRefs = 16

// fileRefs lists the files that use data extent r, from its back
// references (inline, keyed EXTENT_DATA_REF, and SHARED_DATA_REF through
// the parent leaf), with their paths. Offsets are of the extent's start.
// mirrors the kernel's scrub_print_warning / iterate_extent_inodes
func (s *scrubber) fileRefs(r extentRec) []FileRef {
	var out []FileRef
	var parents []ondisk.LogicalAddr
	for _, ref := range r.inline {
		switch ref.Type {
		case ondisk.ExtentDataRefKey:
			out = append(out, FileRef{Subvol: ref.DataRef.Root, Ino: ref.DataRef.ObjectID, Offset: ref.DataRef.Offset})
		case ondisk.SharedDataRefKey:
			parents = append(parents, ondisk.LogicalAddr(ref.Offset))
		}
	}
	lo := ondisk.Key{ObjectID: ondisk.ObjectID(r.start), Type: ondisk.ExtentDataRefKey}
	hi := ondisk.Key{ObjectID: ondisk.ObjectID(r.start), Type: ondisk.SharedDataRefKey, Offset: ^uint64(0)}
	_ = s.ext.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		switch k.Type {
		case ondisk.ExtentDataRefKey:
			if d, err := item.DecodeExtentDataRef(data); err == nil {
				out = append(out, FileRef{Subvol: d.Root, Ino: d.ObjectID, Offset: d.Offset})
			}
		case ondisk.SharedDataRefKey:
			parents = append(parents, ondisk.LogicalAddr(k.Offset))
		}
		return len(out)+len(parents) < maxFileRefs
	})
	for _, p := range parents {
		out = append(out, s.sharedRefs(r.start, p)...)
	}
	if len(out) > maxFileRefs {
		out = out[:maxFileRefs]
	}
	for i := range out {
		out[i].Path, out[i].Err = s.path(out[i].Subvol, out[i].Ino)
	}
	return out
}

// sharedRefs finds the file extent items of leaf parent that point at the
// extent at bytenr.
func (s *scrubber) sharedRefs(bytenr, parent ondisk.LogicalAddr) []FileRef {
	n, err := s.fi.R.ReadNode(parent, diskio.Expect{Level: 0})
	if err != nil {
		return nil
	}
	var out []FileRef
	for i := 0; i < n.NumItems(); i++ {
		k := n.Key(i)
		if k.Type != ondisk.ExtentDataKey {
			continue
		}
		fe, err := item.DecodeFileExtentItem(n.ItemData(i))
		if err != nil || fe.IsInline() || fe.DiskBytenr != bytenr {
			continue
		}
		out = append(out, FileRef{Subvol: n.Owner(), Ino: k.ObjectID, Offset: k.Offset - fe.Offset})
	}
	return out
}

// path is the path of inode ino of subvolume root from the top-level
// subvolume ("/dir/file", "/subvol/dir/file").
func (s *scrubber) path(root, ino ondisk.ObjectID) (string, error) {
	t, err := s.fi.Tree(root)
	if err != nil {
		return "", err
	}
	p, err := inode.Path(t, ino, ondisk.FirstFreeObjectID)
	if err != nil {
		return "", err
	}
	sub, err := s.subvolPath(root, 0)
	if err != nil {
		return "", err
	}
	return sub + "/" + p, nil
}

// subvolPath is where subvolume id is linked from the top level ("" for
// the top level itself), through its ROOT_BACKREF items.
func (s *scrubber) subvolPath(id ondisk.ObjectID, depth int) (string, error) {
	if id == ondisk.FSTreeObjectID {
		return "", nil
	}
	if p, ok := s.subvolPaths[id]; ok {
		return p, nil
	}
	if depth > 64 {
		return "", diskio.Corruptf("subvolume %d: ROOT_BACKREF chain deeper than 64", id)
	}
	lo := ondisk.Key{ObjectID: id, Type: ondisk.RootBackrefKey}
	hi := ondisk.Key{ObjectID: id, Type: ondisk.RootBackrefKey, Offset: ^uint64(0)}
	var parent ondisk.ObjectID
	var ref item.RootRef
	found := false
	err := s.fi.RootTree.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		r, err := item.DecodeRootRef(data)
		if err == nil {
			parent, ref, found = ondisk.ObjectID(k.Offset), r, true
		}
		return !found
	})
	if err != nil {
		return "", err
	}
	if !found {
		return "", fmt.Errorf("subvolume %d is not linked anywhere (no ROOT_BACKREF)", id)
	}
	up, err := s.subvolPath(parent, depth+1)
	if err != nil {
		return "", err
	}
	pt, err := s.fi.Tree(parent)
	if err != nil {
		return "", err
	}
	dir, err := inode.Path(pt, ref.DirID, ondisk.FirstFreeObjectID)
	if err != nil {
		return "", err
	}
	p := up + "/" + string(ref.Name)
	if dir != "" {
		p = up + "/" + dir + "/" + string(ref.Name)
	}
	if s.subvolPaths == nil {
		s.subvolPaths = map[ondisk.ObjectID]string{}
	}
	s.subvolPaths[id] = p
	return p, nil
}
