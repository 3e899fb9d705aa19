// Package hostile crafts the damaged images the containment tests feed to
// every reader (library, check, CLI, FUSE): a clean image is built through
// the public write API, then single items or pointers are patched in place
// with fresh block checksums, as an attacker who knows the format would.
//
// It imports the root package, so only tests of packages the root package
// does not import (and external test packages) can use it.
package hostile

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// Base is the clean image every variant starts from:
//
//	many/f000..f599   small files: the FS tree has internal nodes (level >= 1)
//	a/b/c/d           nested directories, a/b/c/file
//	list/             good1 sl-sh good2 bad-len good3 zz nu-l good4 (files)
//	sparse            4 KiB of data at offset 0
type Base struct {
	Path string
	Ino  map[string]uint64 // inode of each path above (and "." for the root)
}

// ManyFiles is how many files many/ holds.
const ManyFiles = 600

// ListGood are the names in list/ that BadNames leaves intact, sorted.
var ListGood = []string{"bad-len", "good1", "good2", "good3", "good4"}

// Build makes the base image in t.TempDir().
func Build(t testing.TB) *Base {
	t.Helper()
	img := filepath.Join(t.TempDir(), "base.img")
	if err := gobtrfs.CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	w, err := gobtrfs.OpenRW(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			w.Close()
			t.Fatal(err)
		}
	}
	must(w.MkdirAll("/many", 0o755))
	for i := range ManyFiles {
		must(w.WriteFile(fmt.Sprintf("/many/f%03d", i), []byte(fmt.Sprintf("file %d\n", i)), 0o644))
	}
	must(w.MkdirAll("/a/b/c/d", 0o755))
	must(w.WriteFile("/a/b/c/file", []byte("in c\n"), 0o644))
	must(w.Mkdir("/list", 0o755))
	for _, n := range []string{"good1", "sl-sh", "good2", "bad-len", "good3", "zz", "nu-l", "good4"} {
		must(w.WriteFile("/list/"+n, []byte(n+"\n"), 0o644))
	}
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i)
	}
	must(w.WriteFile("/sparse", data, 0o644))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("btrfs"); err == nil {
		testutil.CheckImage(t, img) // the base is clean: only the patches are hostile
	}
	b := &Base{Path: img, Ino: map[string]uint64{}}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for _, p := range []string{".", "many", "a", "a/b", "a/b/c", "a/b/c/d", "list", "sparse",
		"list/sl-sh", "list/bad-len", "list/zz", "list/nu-l"} {
		fi, err := fsys.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		b.Ino[p] = fi.Sys().(*gobtrfs.Stat).Ino
	}
	return b
}

// Copy copies the base image to a new file named name in t.TempDir().
func (b *Base) Copy(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	in, err := os.Open(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Patcher edits tree blocks of an image in place (every copy), with fresh
// checksums.
type Patcher struct {
	t   testing.TB
	dev *blockdev.File
	fi  *fsinfo.FSInfo
}

// Open opens img for patching; Close (or else t.Cleanup) closes it.
func Open(t testing.TB, img string) *Patcher {
	t.Helper()
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	return &Patcher{t: t, dev: dev, fi: fi}
}

// Close closes the image: readers then see it unlocked.
func (p *Patcher) Close() { p.dev.Close() }

// Info is the filesystem as the patcher reads it.
func (p *Patcher) Info() *fsinfo.FSInfo { return p.fi }

// EditBlock rewrites the tree block at addr through fn, fixing its checksum.
func (p *Patcher) EditBlock(addr ondisk.LogicalAddr, fn func(b []byte)) {
	p.t.Helper()
	n, err := p.fi.R.ReadNode(addr, diskio.Expect{Level: -1})
	if err != nil {
		p.t.Fatalf("read block %d: %v", addr, err)
	}
	b := append([]byte(nil), n.Data...)
	fn(b)
	p.fi.Csum.SetBlock(b)
	copies, _, err := p.fi.Chunks.Map(addr, uint64(len(b)))
	if err != nil {
		p.t.Fatal(err)
	}
	for _, c := range copies {
		if _, err := p.dev.WriteAt(b, int64(c.Physical)); err != nil {
			p.t.Fatal(err)
		}
	}
	p.fi.R.Invalidate(addr)
}

// EditItem rewrites the data of the item with exactly key in tree through fn.
func (p *Patcher) EditItem(tree ondisk.ObjectID, key ondisk.Key, fn func(d []byte)) {
	p.t.Helper()
	tr, err := p.fi.Tree(tree)
	if err != nil {
		p.t.Fatal(err)
	}
	path, exact, err := tr.Search(key)
	if err != nil || !exact {
		p.t.Fatalf("tree %s: item %v: found %v, %v", ondisk.TreeName(tree), key, exact, err)
	}
	leaf, slot := path.Leaf().Addr, path.Slots[0]
	p.EditBlock(leaf, func(b []byte) {
		it := ondisk.DecodeItemHeader(b, slot)
		start := ondisk.HeaderSize + int(it.Offset)
		fn(b[start : start+int(it.Size)])
	})
}

// EditDirEntry rewrites the DIR_ITEM and the DIR_INDEX of name in directory
// dir (FS tree) through fn, which gets the raw btrfs_dir_item.
func (p *Patcher) EditDirEntry(dir uint64, name string, fn func(d []byte)) {
	p.t.Helper()
	p.editDirEntry(dir, name, true, fn)
}

// EditDirIndex rewrites only the DIR_INDEX of name (what readdir lists;
// lookups go through the DIR_ITEM, whose key is the hash of the name).
func (p *Patcher) EditDirIndex(dir uint64, name string, fn func(d []byte)) {
	p.t.Helper()
	p.editDirEntry(dir, name, false, fn)
}

func (p *Patcher) editDirEntry(dir uint64, name string, both bool, fn func(d []byte)) {
	p.t.Helper()
	tr, err := p.fi.Tree(ondisk.FSTreeObjectID)
	if err != nil {
		p.t.Fatal(err)
	}
	hash := ondisk.Key{ObjectID: ondisk.ObjectID(dir), Type: ondisk.DirItemKey, Offset: item.NameHash([]byte(name))}
	var index *ondisk.Key
	tr.Range(ondisk.Key{ObjectID: ondisk.ObjectID(dir), Type: ondisk.DirIndexKey},
		ondisk.Key{ObjectID: ondisk.ObjectID(dir), Type: ondisk.DirIndexKey, Offset: ^uint64(0)},
		func(k ondisk.Key, d []byte) bool {
			di, _, err := item.DecodeDirItem(d)
			if err == nil && string(di.Name) == name {
				index = &k
				return false
			}
			return true
		})
	if index == nil {
		p.t.Fatalf("dir %d: no DIR_INDEX for %q", dir, name)
	}
	if both {
		p.EditItem(ondisk.FSTreeObjectID, hash, fn)
	}
	p.EditItem(ondisk.FSTreeObjectID, *index, fn)
}

// Dir item field offsets (struct btrfs_dir_item).
const (
	dirLocation = 0
	dirNameLen  = 27
	dirType     = 29
	dirName     = 30
)

// SelfPointer makes the last key pointer of the FS tree's root node point
// at the root node itself, with its generation: checksums and generations
// are valid, only the level says something is wrong. It returns the image
// and the root node's address.
func SelfPointer(t testing.TB, b *Base) (string, ondisk.LogicalAddr) {
	t.Helper()
	img := b.Copy(t, "selfptr.img")
	p := Open(t, img)
	defer p.Close()
	tr, err := p.fi.Tree(ondisk.FSTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Level < 1 {
		t.Fatalf("FS tree root is a leaf: the base image needs more files")
	}
	root := tr.Root
	p.EditBlock(root, func(blk []byte) {
		h := ondisk.DecodeHeader(blk)
		kp := ondisk.DecodeKeyPtr(blk, int(h.NumItems)-1)
		kp.BlockPtr, kp.Generation = root, h.Generation
		kp.Encode(blk, int(h.NumItems)-1)
	})
	return img, root
}

// DirLoop points the entry "c" of directory a/b at a/b itself (toRoot
// false) or at the root directory: a walker that trusts entries descends
// for ever.
func DirLoop(t testing.TB, b *Base, toRoot bool) string {
	t.Helper()
	img := b.Copy(t, "dirloop.img")
	target := b.Ino["a/b"]
	if toRoot {
		target = b.Ino["."]
	}
	p := Open(t, img)
	defer p.Close()
	p.EditDirEntry(b.Ino["a/b"], "c", func(d []byte) {
		binary.LittleEndian.PutUint64(d[dirLocation:], target)
	})
	return img
}

// BadNames gives entries of list/ names no directory can hold, in their
// DIR_INDEX items (what readdir lists; the tree-checker rules the kernel
// applies to blocks do not look at these names): "sl-sh" becomes "sl/sh",
// "nu-l" gets a NUL ("nu\x00l") and "zz" becomes "..".
func BadNames(t testing.TB, b *Base) string {
	t.Helper()
	img := b.Copy(t, "badnames.img")
	p := Open(t, img)
	defer p.Close()
	dir := b.Ino["list"]
	rename := func(from, to string) {
		p.EditDirIndex(dir, from, func(d []byte) { copy(d[dirName:], to) })
	}
	rename("sl-sh", "sl/sh")
	rename("nu-l", "nu\x00l")
	rename("zz", "..")
	return img
}

// BadNameLen gives the DIR_INDEX of entry (a path of the base image, such
// as "list/bad-len" or "many/f300") a name length past the end of its item.
// This breaks the kernel's tree-checker rules for the leaf that holds it.
func BadNameLen(t testing.TB, b *Base, entry string) string {
	t.Helper()
	return editIndex(t, b, "badnamelen.img", entry, func(d []byte) { binary.LittleEndian.PutUint16(d[dirNameLen:], 0xff00) })
}

// BadType gives the DIR_INDEX of entry an invalid file type (also against
// the tree-checker rules).
func BadType(t testing.TB, b *Base, entry string) string {
	t.Helper()
	return editIndex(t, b, "badtype.img", entry, func(d []byte) { d[dirType] = 0x7f })
}

func editIndex(t testing.TB, b *Base, name, entry string, fn func(d []byte)) string {
	t.Helper()
	img := b.Copy(t, name)
	p := Open(t, img)
	defer p.Close()
	dir, base := path.Split(entry)
	p.EditDirIndex(b.Ino[path.Clean(dir)], base, fn)
	return img
}

// HugeSize sets the size of "sparse" to 2^62: past its one extent the file
// is a hole of exabytes.
func HugeSize(t testing.TB, b *Base) string {
	t.Helper()
	img := b.Copy(t, "hugesize.img")
	p := Open(t, img)
	defer p.Close()
	key := ondisk.Key{ObjectID: ondisk.ObjectID(b.Ino["sparse"]), Type: ondisk.InodeItemKey}
	p.EditItem(ondisk.FSTreeObjectID, key, func(d []byte) {
		binary.LittleEndian.PutUint64(d[16:], 1<<62) // btrfs_inode_item.size
	})
	return img
}
