package fsops

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// btrfs.* xattrs are properties (fs/btrfs/props.c): btrfs.compression is
// the only one, and it also sets the inode's compression flags, so lsattr
// shows the same on both mounts.
const (
	propPrefix      = "btrfs."
	propCompression = "btrfs.compression"
)

// isProp reports whether name is in the btrfs. namespace.
func isProp(name string) bool { return strings.HasPrefix(name, propPrefix) }

// compressionFlags checks a btrfs.compression value and returns the
// COMPRESS/NOCOMPRESS flags it sets ("" clears both). Valid values are an
// algorithm, optionally with a level ("zstd:3"), and "no"/"none".
// mirrors prop_compression_validate / prop_compression_apply
func compressionFlags(v string) (uint64, error) {
	switch {
	case v == "":
		return 0, nil
	case v == "no" || v == "none":
		return item.InodeNoCompress, nil
	}
	for _, alg := range []string{"lzo", "zlib", "zstd"} {
		if strings.HasPrefix(v, alg) {
			return item.InodeCompress, nil
		}
	}
	return 0, errf(syscall.EINVAL, "btrfs.compression value %q: not lzo, zlib, zstd, no or none", v)
}

// propCompression is the algorithm id's btrfs.compression property names
// (None without one, or for "no"/"none"). mirrors btrfs_load_inode_props
// (prop_compression_apply sets inode->prop_compress)
func (o *op) propCompression(id ondisk.InodeRef) (compress.Alg, error) {
	d, err := o.findXattr(id, propCompression)
	if err != nil || d == nil {
		return compress.None, err
	}
	alg, err := compress.ParseAlg(string(d.Data))
	if err != nil {
		return compress.None, nil // not ours to judge here: the flag alone decides
	}
	return alg, nil
}

// setProp sets (value non-nil) or removes property name on id: the xattr
// and the inode flags it stands for, in one transaction. An empty value
// removes it, as on the kernel (removexattr is a nil value with
// XattrReplace: ENODATA when unset). mirrors btrfs_set_prop
func (f *FS) setProp(id ondisk.InodeRef, name string, value []byte, flags int) error {
	if name != propCompression {
		return errf(syscall.EINVAL, "setxattr %q on %v: unknown btrfs property", name, id)
	}
	v := string(value)
	fl, err := compressionFlags(v)
	if err != nil {
		return err
	}
	remove := value == nil || v == ""
	return f.run(func(o *op) error {
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if x.Flags&(item.InodeNoDataCow|item.InodeNoDataSum) != 0 && !remove {
			return errf(syscall.EINVAL, "setxattr %q on %v: a NODATACOW/NODATASUM inode cannot be compressed", name, id)
		}
		old, err := o.findXattr(id, name)
		if err != nil {
			return err
		}
		switch {
		case old != nil && flags&XattrCreate != 0:
			return errf(syscall.EEXIST, "setxattr %q on %v", name, id)
		case old == nil && flags&XattrReplace != 0:
			return errf(syscall.ENODATA, "setxattr %q on %v", name, id)
		}
		if err := o.reserve(itemsXattr); err != nil {
			return fmt.Errorf("setxattr %q on %v: %w", name, id, err)
		}
		if remove {
			if old != nil {
				t, err := o.tree(id.Root)
				if err != nil {
					return err
				}
				if err := o.deleteNamed(t, xattrKey(id.Ino, name), name); err != nil {
					return err
				}
			}
		} else if err := o.putXattr(id, name, value); err != nil {
			return err
		}
		x.Flags = x.Flags&^(item.InodeCompress|item.InodeNoCompress) | fl
		o.touch(x, false)
		return o.putInode(id, x)
	})
}
