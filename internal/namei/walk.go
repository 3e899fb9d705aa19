// Package namei resolves slash-separated paths to inodes, as the kernel's
// path walk does (fs/namei.c), for every door that takes a path: the
// library's read-only FS and read-write RW, and the CLI's image commands.
//
// The rules, each the kernel's:
//   - a path starts at the walk's root whether or not it begins with '/';
//     empty components (repeated slashes) are skipped;
//   - every component but the last must be a directory (ENOTDIR), and so
//     must the last when the path ends in '/' (a trailing slash also
//     follows a final symlink);
//   - "." stays, ".." goes to the directory the walk came from, and at the
//     root stays at the root; ".." is never resolved lexically, so "l/.."
//     is the parent of what symlink l names;
//   - a symlink in the middle of a path is always followed, the last one
//     only when asked; a relative target is resolved from the directory
//     that holds the link, an absolute one from the root; more than 40
//     symlinks in one walk is ELOOP (MAXSYMLINKS);
//   - a directory is entered only through its one link (FS.CheckLink, the
//     rule of inode.CheckDirLink), so entries of a hostile image that name
//     an ancestor cannot make a walk loop.
//
// The walk keeps the stack of directories it came through: ".." pops it,
// so ".." from a subvolume's root returns to the directory that links it.
// With every directory reached through its one link, that is its parent.
package namei

import (
	"strings"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// MaxSymlinks bounds the symlinks followed in one walk. mirrors MAXSYMLINKS
const MaxSymlinks = 40

// FS is what a walk needs of a filesystem engine. Errors pass through the
// walk unchanged.
type FS interface {
	// Stat returns the inode item of ref.
	Stat(ref ondisk.InodeRef) (item.InodeItem, error)
	// Lookup returns what name in directory dir names, and its inode item.
	Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, item.InodeItem, error)
	// CheckLink verifies that name in dir, which names the directory
	// target (x is its inode item), is that directory's one link.
	CheckLink(dir ondisk.InodeRef, name string, target ondisk.InodeRef, x *item.InodeItem) error
	// Readlink returns the target of symlink ref (x is its inode item).
	Readlink(ref ondisk.InodeRef, x *item.InodeItem) (string, error)
}

// step is one directory on the walk's stack.
type step struct {
	ref ondisk.InodeRef
	x   item.InodeItem
}

// Resolve walks path from root. A final symlink is followed only when
// follow is set (or the path ends in '/').
func Resolve(fs FS, root ondisk.InodeRef, path string, follow bool) (ondisk.InodeRef, item.InodeItem, error) {
	rx, err := fs.Stat(root)
	if err != nil {
		return root, rx, err
	}
	top, err := walk(fs, []step{{root, rx}}, Split(path), follow)
	return top.ref, top.x, err
}

// ResolveParent walks all of path but its last component, which it returns
// with the directory that holds it: where a create, remove or rename of
// path happens. A path with no component (the root) or whose last
// component is "." or ".." is EEXIST, as mkdir(2) has it: those name a
// directory that exists and is never created, removed or replaced by that
// name (never by its parent's name, as a lexical "a/b/.." = "a" would).
// Trailing slashes are ignored ("a/b/" is b in a).
func ResolveParent(fs FS, root ondisk.InodeRef, path string) (ondisk.InodeRef, string, error) {
	comps := Split(strings.TrimRight(path, "/"))
	if len(comps) == 0 {
		return root, "", syscall.EEXIST
	}
	base := comps[len(comps)-1]
	if base == "." || base == ".." {
		return root, base, syscall.EEXIST
	}
	rx, err := fs.Stat(root)
	if err != nil {
		return root, base, err
	}
	dir, err := walk(fs, []step{{root, rx}}, comps[:len(comps)-1], true)
	if err == nil && !isDir(&dir.x) {
		err = syscall.ENOTDIR
	}
	return dir.ref, base, err
}

// walk resolves comps from the top of stack.
func walk(fs FS, stack []step, comps []string, follow bool) (step, error) {
	links := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		cur := stack[len(stack)-1]
		if !isDir(&cur.x) {
			return cur, syscall.ENOTDIR
		}
		switch c {
		case ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		next, x, err := fs.Lookup(cur.ref, c)
		if err != nil {
			return cur, err
		}
		if isDir(&x) {
			if err := fs.CheckLink(cur.ref, c, next, &x); err != nil {
				return cur, err
			}
		}
		if x.Mode&item.SIFMT == item.SIFLNK && (len(comps) > 0 || follow) {
			if links++; links > MaxSymlinks {
				return cur, syscall.ELOOP
			}
			target, err := fs.Readlink(next, &x)
			if err != nil {
				return cur, err
			}
			if strings.HasPrefix(target, "/") {
				stack = stack[:1]
			}
			comps = append(Split(target), comps...)
			continue
		}
		stack = append(stack, step{next, x})
	}
	return stack[len(stack)-1], nil
}

// Split returns the components of a path or symlink target: empty ones
// (repeated, leading and trailing slashes) dropped, and a trailing slash
// after a component kept as a final "." (so that the component must be a
// directory, and a symlink there is followed).
func Split(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	if len(out) > 0 && strings.HasSuffix(p, "/") {
		out = append(out, ".")
	}
	return out
}

func isDir(x *item.InodeItem) bool { return x.Mode&item.SIFMT == item.SIFDIR }
