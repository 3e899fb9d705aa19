package gobtrfs

import (
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"io/fs"
	"path"
	"strings"

	"github.com/gobtrfs/gobtrfs/internal/inode"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// maxSymlinks bounds symlink expansion in one lookup, as Linux's MAXSYMLINKS.
const maxSymlinks = 40

// resolved is the result of a path walk.
type resolved struct {
	n     ondisk.InodeRef
	inode item.InodeItem
	name  string // base name for FileInfo
}

type walkStep struct {
	n     ondisk.InodeRef
	inode item.InodeItem
}

// resolve walks name from the root. Symlinks in the middle are always
// followed; a final one only if follow. Absolute symlink targets restart at
// this FS's root and ".." never climbs above it. The walk keeps the stack of
// (subvolume, inode) pairs it came through, so ".." after entering a
// subvolume returns to the directory that linked it.
func (f *FS) resolve(name string, follow bool) (resolved, error) {
	if !fs.ValidPath(name) {
		return resolved{}, fs.ErrInvalid
	}
	rootInode, err := f.inode(f.root)
	if err != nil {
		return resolved{}, err
	}
	stack := []walkStep{{f.root, rootInode}}
	comps := splitPath(name)
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		cur := stack[len(stack)-1]
		if cur.inode.Mode&item.SIFMT != item.SIFDIR {
			return resolved{}, errNotDir
		}
		e, n, err := f.lookupEntry(cur.n, c)
		if err != nil {
			return resolved{}, err
		}
		x, err := f.inode(n)
		if err == nil {
			err = f.checkLink(cur.n, e, n, &x)
		}
		if err != nil {
			return resolved{}, err
		}
		if x.Mode&item.SIFMT == item.SIFLNK && (len(comps) > 0 || follow) {
			if links++; links > maxSymlinks {
				return resolved{}, errLoop
			}
			target, err := f.readlink(n, &x)
			if err != nil {
				return resolved{}, err
			}
			if strings.HasPrefix(target, "/") {
				stack = stack[:1]
			}
			comps = append(splitPath(target), comps...)
			continue
		}
		stack = append(stack, walkStep{n, x})
	}
	top := stack[len(stack)-1]
	return resolved{n: top.n, inode: top.inode, name: path.Base(name)}, nil
}

func splitPath(p string) []string {
	if p == "." || p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// lookupEntry finds name in directory dir: the entry and the node it names.
func (f *FS) lookupEntry(dir ondisk.InodeRef, name string) (inode.DirEntry, ondisk.InodeRef, error) {
	if dir.IsEmptySubvolDir() {
		return inode.DirEntry{}, ondisk.InodeRef{}, fs.ErrNotExist
	}
	t, err := f.tree(dir.Root)
	if err != nil {
		return inode.DirEntry{}, ondisk.InodeRef{}, err
	}
	e, err := inode.Lookup(t, dir.Ino, name)
	if err != nil {
		return inode.DirEntry{}, ondisk.InodeRef{}, err
	}
	n, err := f.child(dir, e)
	return e, n, err
}
