package fsops

import (
	"bytes"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Properties of subvolumes and of the filesystem that the btrfs ioctls
// read and change (`btrfs property`, `btrfs subvolume set-default`,
// `btrfs filesystem label`).

// Superblock returns a copy of the superblock the next commit writes.
func (f *FS) Superblock() ondisk.Superblock { return f.tx.Super() }

// SubvolumeReadonly reports whether subvolume id is read-only.
func (f *FS) SubvolumeReadonly(id ondisk.ObjectID) (bool, error) {
	var ro bool
	err := f.run(func(o *op) error {
		ri, err := o.rootItem(id)
		ro = ri.Flags&item.RootSubvolRdonly != 0
		return err
	})
	return ro, err
}

// SetSubvolumeReadonly makes subvolume id read-only or read-write and
// commits, as the kernel does. mirrors btrfs_ioctl_subvol_setflags
func (f *FS) SetSubvolumeReadonly(id ondisk.ObjectID, ro bool) error {
	changed := false
	err := f.run(func(o *op) error {
		ri, err := o.rootItem(id)
		if err != nil {
			return err
		}
		if ri.Refs == 0 {
			return errf(syscall.ENOENT, "subvolume %d is being deleted", id)
		}
		fl := ri.Flags &^ item.RootSubvolRdonly
		if ro {
			fl |= item.RootSubvolRdonly
		}
		if fl == ri.Flags {
			return nil
		}
		if err := o.reserve(1); err != nil {
			return fmt.Errorf("set subvolume %d read-only=%v: %w", id, ro, err)
		}
		changed = true
		return o.h.SetRootFlags(id, fl)
	})
	if err != nil || !changed {
		return err
	}
	return f.Commit()
}

// SetDefaultSubvolume makes subvolume id (0: the top level) the one a
// mount without subvol= shows: the "default" entry of the root tree
// directory names it, and the DEFAULT_SUBVOL incompat flag is set.
// mirrors btrfs_ioctl_default_subvol
func (f *FS) SetDefaultSubvolume(id ondisk.ObjectID) error {
	if id == 0 {
		id = ondisk.FSTreeObjectID
	}
	if id != ondisk.FSTreeObjectID && (id < ondisk.FirstFreeObjectID || id > ondisk.LastFreeObjectID) {
		return errf(syscall.ENOENT, "set default subvolume %d: not a subvolume id", id)
	}
	return f.run(func(o *op) error {
		ri, rootKey, err := o.rootItemKey(id)
		if err != nil {
			return err
		}
		if ri.Refs == 0 {
			return errf(syscall.ENOENT, "set default subvolume %d: it is being deleted", id)
		}
		rt, err := o.tree(ondisk.RootTreeObjectID)
		if err != nil {
			return err
		}
		name := []byte("default")
		key := dirItemKey(ondisk.RootTreeDirObjectID, name)
		data, ok, err := rt.Lookup(key)
		if err != nil {
			return fmt.Errorf("set default subvolume %d: %w", id, err)
		}
		if !ok {
			return errf(syscall.ENOENT, "set default subvolume %d: the root tree has no \"default\" entry", id)
		}
		items, err := item.DecodeDirItems(data)
		if err != nil {
			return corruptf("root tree directory item %v: %w", key, err)
		}
		found := false
		var out []byte
		for i := range items {
			if bytes.Equal(items[i].Name, name) {
				items[i].Location = rootKey // the ROOT_ITEM's key, offset included, as the kernel writes it
				found = true
			}
			out = append(out, items[i].Bytes()...)
		}
		if !found {
			return errf(syscall.ENOENT, "set default subvolume %d: the root tree has no \"default\" entry", id)
		}
		if err := o.reserve(1); err != nil {
			return fmt.Errorf("set default subvolume %d: %w", id, err)
		}
		if err := rt.UpdateItem(o.a, key, out); err != nil {
			return fmt.Errorf("set default subvolume %d: %w", id, err)
		}
		o.h.Super().IncompatFlags |= ondisk.IncompatDefaultSubvol
		return nil
	})
}

// SetLabel sets the filesystem label and commits, as the kernel does.
// mirrors btrfs_ioctl_set_fslabel
func (f *FS) SetLabel(label string) error {
	if len(label) >= ondisk.LabelSize {
		return errf(syscall.EINVAL, "label of %d bytes: at most %d", len(label), ondisk.LabelSize-1)
	}
	err := f.run(func(o *op) error {
		sb := o.h.Super()
		clear(sb.Label[:])
		copy(sb.Label[:], label)
		return nil
	})
	if err != nil {
		return err
	}
	return f.Commit()
}

// InodePath is the path of id from its subvolume's root ("" for the root).
// mirrors btrfs_search_path_in_tree
func (f *FS) InodePath(id ondisk.InodeRef) (string, error) {
	var p string
	err := f.run(func(o *op) error {
		var err error
		p, err = o.inodePath(id)
		return err
	})
	return p, err
}

// SubvolumeLink returns where subvolume id is linked (its parent tree,
// directory and name), ENOENT when it is not a linked subvolume.
func (f *FS) SubvolumeLink(id ondisk.ObjectID) (dir ondisk.InodeRef, name string, err error) {
	subs, err := f.ListSubvolumes()
	if err != nil {
		return dir, "", err
	}
	for _, s := range subs {
		if s.ID == id && s.Parent != 0 {
			return ondisk.InodeRef{Root: s.Parent, Ino: s.DirID}, s.Name, nil
		}
	}
	return dir, "", errf(syscall.ENOENT, "subvolume %d", id)
}
