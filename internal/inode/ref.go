package inode

import (
	"fmt"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// Ref is one name of an inode: the parent directory, the DIR_INDEX index and the name.
type Ref struct {
	Parent ondisk.ObjectID
	Index  uint64
	Name   string
}

// Refs returns every name of ino from its INODE_REF and INODE_EXTREF items.
// mirrors the walk of btrfs_ref_to_path / iterate_inode_refs
func Refs(t *ctree.Tree, ino ondisk.ObjectID) ([]Ref, error) {
	lo := ondisk.Key{ObjectID: ino, Type: ondisk.InodeRefKey}
	hi := ondisk.Key{ObjectID: ino, Type: ondisk.InodeExtrefKey, Offset: ^uint64(0)}
	var out []Ref
	var derr error
	err := t.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		switch k.Type {
		case ondisk.InodeRefKey:
			refs, err := item.DecodeInodeRefs(data)
			if err != nil {
				derr = fmt.Errorf("item %v: %w", k, corrupt(err))
				return false
			}
			for _, r := range refs {
				out = append(out, Ref{Parent: ondisk.ObjectID(k.Offset), Index: r.Index, Name: string(r.Name)})
			}
		case ondisk.InodeExtrefKey:
			refs, err := item.DecodeInodeExtrefs(data)
			if err != nil {
				derr = fmt.Errorf("item %v: %w", k, corrupt(err))
				return false
			}
			for _, r := range refs {
				out = append(out, Ref{Parent: r.Parent, Index: r.Index, Name: string(r.Name)})
			}
		}
		return true
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("refs of inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	return out, nil
}

// Path returns the path of directory ino relative to the tree's root
// directory root ("" for the root itself), following the first back reference
// of each ancestor. It stops after 4096 levels to survive reference loops.
func Path(t *ctree.Tree, ino, root ondisk.ObjectID) (string, error) {
	path := ""
	for depth := 0; ino != root; depth++ {
		if depth > 4096 {
			return "", fmt.Errorf("path of inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID),
				corrupt(fmt.Errorf("back reference loop")))
		}
		refs, err := Refs(t, ino)
		if err != nil {
			return "", err
		}
		if len(refs) == 0 {
			return "", notExist("path of inode %d (tree %s): no back reference", ino, ondisk.TreeName(t.ID))
		}
		if path == "" {
			path = refs[0].Name
		} else {
			path = refs[0].Name + "/" + path
		}
		ino = refs[0].Parent
	}
	return path, nil
}
