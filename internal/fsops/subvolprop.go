package fsops

import (
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
