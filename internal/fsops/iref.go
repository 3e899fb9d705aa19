package fsops

import (
	"bytes"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

func inodeRefKey(ino, parent ondisk.ObjectID) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey, Offset: uint64(parent)}
}

func extrefKey(ino, parent ondisk.ObjectID, name []byte) ondisk.Key {
	return ondisk.Key{ObjectID: ino, Type: ondisk.InodeExtrefKey, Offset: item.ExtrefHash(parent, name)}
}

// addInodeRef records that ino is called name at index in parent: an entry
// appended to the INODE_REF item for that parent, or, when that item would
// outgrow a leaf and the filesystem has extended refs, an INODE_EXTREF.
// mirrors btrfs_insert_inode_ref
func (o *op) addInodeRef(root, ino, parent ondisk.ObjectID, name string, index uint64) error {
	t, err := o.tree(root)
	if err != nil {
		return err
	}
	ref := item.InodeRef{Index: index, Name: []byte(name)}
	key := inodeRefKey(ino, parent)
	old, ok, err := t.Lookup(key)
	if err != nil {
		return fmt.Errorf("inode ref %d in %d: %w", ino, parent, err)
	}
	if !ok {
		if err := t.InsertItem(o.a, key, item.InodeRefs{ref}.Bytes()); err != nil {
			return fmt.Errorf("insert inode ref %d %q: %w", ino, name, err)
		}
		return nil
	}
	refs, err := item.DecodeInodeRefs(old)
	if err != nil {
		return corruptf("inode ref %v: %w", key, err)
	}
	for _, r := range refs {
		if bytes.Equal(r.Name, ref.Name) {
			return errf(syscall.EEXIST, "inode ref %d %q in %d", ino, name, parent)
		}
	}
	if len(old)+ref.Size() > o.f.maxItemSize() {
		if !o.f.extref {
			return errf(syscall.EMLINK, "link %d as %q in %d: inode ref item full", ino, name, parent)
		}
		return o.addExtref(root, ino, parent, name, index)
	}
	data := append(append([]byte(nil), old...), item.InodeRefs{ref}.Bytes()...)
	if err := t.UpdateItem(o.a, key, data); err != nil {
		return fmt.Errorf("extend inode ref %d %q: %w", ino, name, err)
	}
	return nil
}

// addExtref inserts an INODE_EXTREF entry. mirrors btrfs_insert_inode_extref
func (o *op) addExtref(root, ino, parent ondisk.ObjectID, name string, index uint64) error {
	t, err := o.tree(root)
	if err != nil {
		return err
	}
	ref := item.InodeExtref{Parent: parent, Index: index, Name: []byte(name)}
	key := extrefKey(ino, parent, ref.Name)
	old, ok, err := t.Lookup(key)
	if err != nil {
		return fmt.Errorf("inode extref %d %q: %w", ino, name, err)
	}
	if !ok {
		return t.InsertItem(o.a, key, item.InodeExtrefs{ref}.Bytes())
	}
	refs, err := item.DecodeInodeExtrefs(old)
	if err != nil {
		return corruptf("inode extref %v: %w", key, err)
	}
	for _, r := range refs {
		if r.Parent == parent && bytes.Equal(r.Name, ref.Name) {
			return errf(syscall.EEXIST, "inode extref %d %q in %d", ino, name, parent)
		}
	}
	if len(old)+ref.Size() > o.f.maxItemSize() {
		return errf(syscall.EMLINK, "link %d as %q in %d: extref item full", ino, name, parent)
	}
	return t.UpdateItem(o.a, key, append(append([]byte(nil), old...), item.InodeExtrefs{ref}.Bytes()...))
}

// delInodeRef removes the back reference of name in parent and returns its
// dir index. mirrors btrfs_del_inode_ref
func (o *op) delInodeRef(root, ino, parent ondisk.ObjectID, name string) (uint64, error) {
	t, err := o.tree(root)
	if err != nil {
		return 0, err
	}
	key := inodeRefKey(ino, parent)
	data, ok, err := t.Lookup(key)
	if err != nil {
		return 0, err
	}
	if ok {
		refs, err := item.DecodeInodeRefs(data)
		if err != nil {
			return 0, corruptf("inode ref %v: %w", key, err)
		}
		for i, r := range refs {
			if !bytes.Equal(r.Name, []byte(name)) {
				continue
			}
			rest := append(append(item.InodeRefs(nil), refs[:i]...), refs[i+1:]...)
			if len(rest) == 0 {
				err = t.DeleteItem(o.a, key)
			} else {
				err = t.UpdateItem(o.a, key, rest.Bytes())
			}
			return r.Index, err
		}
	}
	key = extrefKey(ino, parent, []byte(name))
	data, ok, err = t.Lookup(key)
	if err != nil {
		return 0, err
	}
	if ok {
		refs, err := item.DecodeInodeExtrefs(data)
		if err != nil {
			return 0, corruptf("inode extref %v: %w", key, err)
		}
		for i, r := range refs {
			if r.Parent != parent || !bytes.Equal(r.Name, []byte(name)) {
				continue
			}
			rest := append(append(item.InodeExtrefs(nil), refs[:i]...), refs[i+1:]...)
			if len(rest) == 0 {
				err = t.DeleteItem(o.a, key)
			} else {
				err = t.UpdateItem(o.a, key, rest.Bytes())
			}
			return r.Index, err
		}
	}
	return 0, corruptf("inode %d has no back reference for %q in %d", ino, name, parent)
}

// parentDir returns the directory holding dir (dirs have one name); 0 for
// the root directory of a subvolume.
func (o *op) parentDir(dir ondisk.InodeRef) (ondisk.ObjectID, error) {
	if dir.Ino == RootDirIno {
		return 0, nil
	}
	t, err := o.tree(dir.Root)
	if err != nil {
		return 0, err
	}
	p, ok, err := t.SearchForward(ondisk.Key{ObjectID: dir.Ino, Type: ondisk.InodeRefKey})
	if err != nil {
		return 0, err
	}
	if ok {
		if k := p.Key(); k.ObjectID == dir.Ino && k.Type == ondisk.InodeRefKey {
			return ondisk.ObjectID(k.Offset), nil
		}
		if k := p.Key(); k.ObjectID == dir.Ino && k.Type == ondisk.InodeExtrefKey {
			r, _, err := item.DecodeInodeExtref(p.Data())
			if err != nil {
				return 0, corruptf("inode extref %v: %w", k, err)
			}
			return r.Parent, nil
		}
	}
	return 0, corruptf("directory %v has no back reference", dir)
}
