package inode

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/ctree"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// A hostile image can hold any directory entry. Two kinds are refused here,
// for every reader (the library, restore, both FUSE backends):
//
//   - entries no directory can hold: a name that is empty, longer than 255
//     bytes, holds '/' or NUL, or is "." or ".."; a type that is not a
//     BTRFS_FT_* file type; a location that is neither an INODE_ITEM nor a
//     ROOT_ITEM. ReadDir skips them (the rest of the directory is listed) and
//     Lookup never matches them.
//   - entries that name a directory that is not theirs. In btrfs a directory
//     has exactly one parent: its only INODE_REF is (parent, name); a
//     subvolume's root has exactly one ROOT_BACKREF. An entry that names a
//     directory whose back reference does not lead back to (this directory,
//     this name) is what makes a walker loop (an entry naming its own
//     directory, the root, or any ancestor): CheckDirLink and
//     CheckSubvolLink refuse it. With every directory reached only through
//     its one parent, a walk from the root is a tree and ends.

// NameMax is the longest name btrfs stores. mirrors BTRFS_NAME_LEN
const NameMax = 255

// EntryError is a directory entry that cannot be used.
type EntryError struct {
	Tree  ondisk.ObjectID
	Dir   ondisk.ObjectID
	Index uint64 // DIR_INDEX, 0 if unknown
	Name  string // as stored (quoted when printed)
	// Target is the inode or subvolume the entry names (0 if unknown).
	Target ondisk.ObjectID
	Err    error
}

func (e *EntryError) Error() string {
	s := fmt.Sprintf("dir %d (tree %s): entry %q", uint64(e.Dir), ondisk.TreeName(e.Tree), e.Name)
	if e.Index != 0 {
		s += fmt.Sprintf(" (index %d)", e.Index)
	}
	if e.Target != 0 {
		s += fmt.Sprintf(" -> %d", uint64(e.Target))
	}
	return s + ": " + e.Err.Error()
}

func (e *EntryError) Unwrap() error { return e.Err }

// ValidName reports why name cannot be a directory entry, or nil.
func ValidName(name string) error {
	switch {
	case name == "":
		return diskio.Corruptf("empty name")
	case len(name) > NameMax:
		return diskio.Corruptf("name of %d bytes, longer than %d", len(name), NameMax)
	case name == "." || name == "..":
		return diskio.Corruptf("name %q is reserved", name)
	case strings.ContainsAny(name, "/\x00"):
		return diskio.Corruptf("name holds '/' or NUL")
	}
	return nil
}

// validEntry reports why a decoded entry cannot be used, or nil.
// mirrors check_dir_item (tree-checker.c) for one entry, plus the name rules
func validEntry(di *item.DirItem) error {
	if err := ValidName(string(di.Name)); err != nil {
		return err
	}
	if t := item.FTType(di.Type); t == item.FTUnknown || t >= item.FTXattr {
		return diskio.Corruptf("invalid file type %d", di.Type)
	}
	if len(di.Data) != 0 {
		return diskio.Corruptf("directory entry with %d bytes of xattr data", len(di.Data))
	}
	switch di.Location.Type {
	case ondisk.InodeItemKey:
		if di.Location.ObjectID < ondisk.FirstFreeObjectID {
			return diskio.Corruptf("location %v is not a file inode", di.Location)
		}
	case ondisk.RootItemKey:
	default:
		return diskio.Corruptf("location %v is neither INODE_ITEM nor ROOT_ITEM", di.Location)
	}
	return nil
}

// CheckDirLink verifies that entry e of directory dir, which names the
// directory inode e.Location.ObjectID of the same tree, is that directory's
// one link. Call it before treating the target as a directory (listing it,
// looking names up in it); it costs one tree search.
func CheckDirLink(t *ctree.Tree, dir ondisk.ObjectID, e DirEntry) error {
	target := e.Location.ObjectID
	fail := func(format string, args ...any) error {
		return &EntryError{Tree: t.ID, Dir: dir, Index: e.Index, Name: e.Name, Target: target,
			Err: diskio.Corruptf(format, args...)}
	}
	if target == dir {
		return fail("names its own directory")
	}
	if target == ondisk.FirstFreeObjectID {
		return fail("names the subvolume's root directory")
	}
	refs, err := parentRefs(t, target, 2)
	if err != nil {
		return &EntryError{Tree: t.ID, Dir: dir, Index: e.Index, Name: e.Name, Target: target, Err: err}
	}
	switch {
	case len(refs) == 0:
		return fail("directory %d has no back reference", uint64(target))
	case len(refs) > 1:
		return fail("directory %d has more than one back reference (%d %q, %d %q)", uint64(target),
			uint64(refs[0].Parent), refs[0].Name, uint64(refs[1].Parent), refs[1].Name)
	case refs[0].Parent != dir || refs[0].Name != e.Name:
		return fail("directory %d belongs to dir %d as %q", uint64(target), uint64(refs[0].Parent), refs[0].Name)
	}
	return nil
}

// parentRefs returns up to limit names of ino (INODE_REF, INODE_EXTREF).
func parentRefs(t *ctree.Tree, ino ondisk.ObjectID, limit int) ([]Ref, error) {
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
		return len(out) < limit
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return nil, fmt.Errorf("refs of inode %d (tree %s): %w", ino, ondisk.TreeName(t.ID), err)
	}
	return out, nil
}

// CheckSubvolLink verifies that entry e of directory dir in subvolume
// parent, which names subvolume e.Location.ObjectID, is that subvolume's
// one link: its only ROOT_BACKREF is (parent, dir, name). rootTree is the
// tree root. The top-level subvolume has no parent and is never a target.
func CheckSubvolLink(rootTree *ctree.Tree, parent, dir ondisk.ObjectID, e DirEntry) error {
	child := e.Location.ObjectID
	fail := func(format string, args ...any) error {
		return &EntryError{Tree: parent, Dir: dir, Index: e.Index, Name: e.Name, Target: child,
			Err: diskio.Corruptf(format, args...)}
	}
	if child == parent || child == ondisk.FSTreeObjectID {
		return fail("names subvolume %d, an ancestor", uint64(child))
	}
	lo := ondisk.Key{ObjectID: child, Type: ondisk.RootBackrefKey}
	hi := ondisk.Key{ObjectID: child, Type: ondisk.RootBackrefKey, Offset: ^uint64(0)}
	n, ok := 0, false
	var derr error
	err := rootTree.Range(lo, hi, func(k ondisk.Key, data []byte) bool {
		n++
		r, err := item.DecodeRootRef(data)
		if err != nil {
			derr = fmt.Errorf("item %v: %w", k, corrupt(err))
			return false
		}
		ok = ondisk.ObjectID(k.Offset) == parent && r.DirID == dir && bytes.Equal(r.Name, []byte(e.Name))
		return n < 2
	})
	if err == nil {
		err = derr
	}
	if err != nil {
		return &EntryError{Tree: parent, Dir: dir, Index: e.Index, Name: e.Name, Target: child,
			Err: fmt.Errorf("back references of subvolume %d: %w", uint64(child), err)}
	}
	switch {
	case n == 0:
		return fail("subvolume %d has no back reference", uint64(child))
	case n > 1:
		return fail("subvolume %d has more than one back reference", uint64(child))
	case !ok:
		return fail("subvolume %d belongs to another directory", uint64(child))
	}
	return nil
}
