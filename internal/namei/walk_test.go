package namei

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// memFS is a tree of directories, files and symlinks in memory.
type memFS struct {
	nodes   map[ondisk.InodeRef]*memNode
	next    ondisk.ObjectID
	refused map[string]bool // "dir/name" entries CheckLink refuses
	checked int
}

type memNode struct {
	mode    uint32
	entries map[string]ondisk.InodeRef
	target  string
}

var top = ondisk.InodeRef{Root: 5, Ino: 256}

func newMemFS() *memFS {
	m := &memFS{nodes: map[ondisk.InodeRef]*memNode{}, next: 257, refused: map[string]bool{}}
	m.nodes[top] = &memNode{mode: item.SIFDIR, entries: map[string]ondisk.InodeRef{}}
	return m
}

// add makes p (its parent must exist): a directory, a file, or with
// target != "" a symlink.
func (m *memFS) add(p string, mode uint32, target string) ondisk.InodeRef {
	dir, base := top, p
	if i := strings.LastIndex(p, "/"); i >= 0 {
		var err error
		if dir, _, err = Resolve(m, top, p[:i], true); err != nil {
			panic(err)
		}
		base = p[i+1:]
	}
	ref := ondisk.InodeRef{Root: 5, Ino: m.next}
	m.next++
	m.nodes[ref] = &memNode{mode: mode, entries: map[string]ondisk.InodeRef{}, target: target}
	m.nodes[dir].entries[base] = ref
	return ref
}

func (m *memFS) Stat(r ondisk.InodeRef) (item.InodeItem, error) {
	n, ok := m.nodes[r]
	if !ok {
		return item.InodeItem{}, syscall.ENOENT
	}
	return item.InodeItem{Mode: n.mode}, nil
}

func (m *memFS) Lookup(dir ondisk.InodeRef, name string) (ondisk.InodeRef, item.InodeItem, error) {
	r, ok := m.nodes[dir].entries[name]
	if !ok {
		return r, item.InodeItem{}, syscall.ENOENT
	}
	x, err := m.Stat(r)
	return r, x, err
}

func (m *memFS) CheckLink(dir ondisk.InodeRef, name string, _ ondisk.InodeRef, x *item.InodeItem) error {
	m.checked++
	if x.Mode&item.SIFMT != item.SIFDIR {
		return fmt.Errorf("CheckLink of a non-directory %q", name)
	}
	if m.refused[fmt.Sprintf("%d/%s", uint64(dir.Ino), name)] {
		return errRefused
	}
	return nil
}

var errRefused = errors.New("not the directory's one link")

func (m *memFS) Readlink(r ondisk.InodeRef, _ *item.InodeItem) (string, error) {
	return m.nodes[r].target, nil
}

// TestResolve checks the walk against the kernel's rules (path_resolution(7)).
func TestResolve(t *testing.T) {
	m := newMemFS()
	a := m.add("a", item.SIFDIR, "")
	b := m.add("a/b", item.SIFDIR, "")
	f := m.add("a/b/f", item.SIFREG, "")
	x := m.add("a/x", item.SIFREG, "")
	m.add("a/b/up", item.SIFLNK, "../x")    // relative to the link's directory
	m.add("a/b/abs", item.SIFLNK, "/a/b/f") // from the root
	m.add("a/lb", item.SIFLNK, "b")
	m.add("top", item.SIFLNK, "a/b")
	m.add("empty", item.SIFLNK, "")
	m.add("tofile", item.SIFLNK, "a/b/f/")
	m.add("loop", item.SIFLNK, "loop")
	// a chain of 40 links ends at f; one more is ELOOP
	for i := 1; i <= 41; i++ {
		target := fmt.Sprintf("c%d", i-1)
		if i == 1 {
			target = "a/b/f"
		}
		m.add(fmt.Sprintf("c%d", i), item.SIFLNK, target)
	}
	lb := m.nodes[a].entries["lb"]
	loop := m.nodes[top].entries["loop"]

	for _, c := range []struct {
		path   string
		follow bool
		want   ondisk.InodeRef
		err    error
	}{
		{"", false, top, nil},
		{"/", false, top, nil},
		{".", false, top, nil},
		{"..", false, top, nil}, // ".." at the root stays there
		{"../../a", false, a, nil},
		{"//a//b/", false, b, nil},
		{"a/b/f", false, f, nil},
		{"a/b/up", true, x, nil},   // ../x from a/b is a/x
		{"a/b/abs", true, f, nil},  // absolute target from the root
		{"a/lb/..", false, a, nil}, // ".." of what lb names, not lexical
		{"top/..", false, a, nil},  // top names a/b: ".." is a
		{"top/../..", false, top, nil},
		{"a/lb", false, lb, nil},  // final symlink not followed
		{"a/lb/", false, b, nil},  // unless the path ends in '/'
		{"a/lb", true, b, nil},    // or follow is set
		{"empty", true, top, nil}, // an empty target names the link's directory
		{"a/b/f/", false, f, syscall.ENOTDIR},
		{"a/b/f/.", false, f, syscall.ENOTDIR},
		{"a/b/f/..", false, f, syscall.ENOTDIR},
		{"a/b/f/g", false, f, syscall.ENOTDIR},
		{"tofile", true, f, syscall.ENOTDIR}, // a target's trailing slash applies too
		{"a/nope", false, a, syscall.ENOENT},
		{"loop", false, loop, nil},
		{"loop", true, top, syscall.ELOOP},
		{"c40", true, f, nil}, // 40 symlinks
		{"c41", true, top, syscall.ELOOP},
	} {
		got, _, err := Resolve(m, top, c.path, c.follow)
		if !errors.Is(err, c.err) || c.err == nil && got != c.want {
			t.Errorf("Resolve(%q, follow=%v) = %v, %v; want %v, %v", c.path, c.follow, got, err, c.want, c.err)
		}
	}
	if m.checked == 0 {
		t.Error("CheckLink never called")
	}

	// a directory entered through an entry that is not its one link
	m.refused[fmt.Sprintf("%d/b", uint64(a.Ino))] = true
	if _, _, err := Resolve(m, top, "a/b/f", false); !errors.Is(err, errRefused) {
		t.Errorf("walk through a refused link: %v", err)
	}
	if _, _, err := Resolve(m, top, "a/b", false); !errors.Is(err, errRefused) {
		t.Errorf("final refused link: %v", err)
	}
}

func TestResolveParent(t *testing.T) {
	m := newMemFS()
	a := m.add("a", item.SIFDIR, "")
	b := m.add("a/b", item.SIFDIR, "")
	m.add("a/f", item.SIFREG, "")
	m.add("l", item.SIFLNK, "a/b")
	for _, c := range []struct {
		path string
		dir  ondisk.InodeRef
		name string
		err  error
	}{
		{"a/b", a, "b", nil},
		{"/a/b/", a, "b", nil},
		{"a/new", a, "new", nil},
		{"l/new", b, "new", nil},
		{"l/../new", a, "new", nil},
		{"", top, "", syscall.EEXIST},
		{"/", top, "", syscall.EEXIST},
		{"a/..", top, "..", syscall.EEXIST},
		{"a/.", top, ".", syscall.EEXIST},
		{"a/f/x", top, "x", syscall.ENOTDIR},
		{"nope/x", top, "x", syscall.ENOENT},
	} {
		dir, name, err := ResolveParent(m, top, c.path)
		if !errors.Is(err, c.err) || name != c.name || c.err == nil && dir != c.dir {
			t.Errorf("ResolveParent(%q) = %v, %q, %v; want %v, %q, %v", c.path, dir, name, err, c.dir, c.name, c.err)
		}
	}
}
