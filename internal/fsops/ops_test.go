package fsops

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// configs are the image layouts every targeted test runs on.
var configs = []imageOpts{
	{},
	{nodesize: "4096", csum: "sha256"},
	{csum: "xxhash", features: "^no-holes,^extref"},
	{nodesize: "65536", csum: "blake2"},
}

func forConfigs(t *testing.T, fn func(t *testing.T, img string, o imageOpts)) {
	for _, o := range configs {
		t.Run(o.String(), func(t *testing.T) { fn(t, newImage(t, o), o) })
	}
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %v", what, err, want)
	}
}

func readAll(t *testing.T, f *FS, id ondisk.InodeRef) []byte {
	t.Helper()
	x, err := f.Stat(id)
	must(t, err)
	b, err := f.ReadAt(id, 0, int(x.Size))
	must(t, err)
	return b
}

// checkNBytes recomputes what the extents of a file account for.
func checkNBytes(t *testing.T, f *FS, id ondisk.InodeRef) {
	t.Helper()
	err := f.run(func(o *op) error {
		x, err := o.inode(id)
		if err != nil {
			return err
		}
		es, err := o.extents(id, 0, ^uint64(0))
		if err != nil {
			return err
		}
		var n uint64
		for _, e := range es {
			switch {
			case e.IsInline():
				n += e.RAMBytes
			case !e.hole():
				n += e.NumBytes
			}
		}
		if n != x.NBytes {
			return fmt.Errorf("inode %v: nbytes %d, extents account for %d", id, x.NBytes, n)
		}
		return nil
	})
	must(t, err)
}

func TestNamespace(t *testing.T) {
	forConfigs(t, func(t *testing.T, img string, o imageOpts) {
		f := openImage(t, img, Options{})
		d, err := f.Mkdir(TopLevel, "d", 0o750, 1000, 100)
		must(t, err)
		a, err := f.Create(d, "a", 0o644, 1000, 100, 0)
		must(t, err)
		_, err = f.Create(d, "fifo", syscall.S_IFIFO|0o600, 0, 0, 0)
		must(t, err)
		_, err = f.Create(d, "dev", syscall.S_IFCHR|0o600, 0, 0, 4<<20|65)
		must(t, err)
		_, err = f.Create(d, "sock", syscall.S_IFSOCK|0o600, 0, 0, 0)
		must(t, err)
		_, err = f.Symlink(d, "link", "../some/where", 0, 0)
		must(t, err)
		must(t, f.Link(a, TopLevel, "a-hard"))
		must(t, f.Link(a, d, "a2"))
		_, err = f.Create(d, "a", 0o644, 0, 0, 0)
		wantErrno(t, "create existing", err, syscall.EEXIST)
		_, err = f.Create(a, "x", 0o644, 0, 0, 0)
		wantErrno(t, "create in file", err, syscall.ENOTDIR)
		wantErrno(t, "rmdir non-empty", f.Rmdir(TopLevel, "d"), syscall.ENOTEMPTY)
		wantErrno(t, "unlink dir", f.Unlink(TopLevel, "d"), syscall.EISDIR)
		wantErrno(t, "rmdir file", f.Rmdir(d, "a"), syscall.ENOTDIR)
		wantErrno(t, "unlink missing", f.Unlink(d, "nope"), syscall.ENOENT)
		_, err = f.Create(d, strings.Repeat("n", 256), 0o644, 0, 0, 0)
		wantErrno(t, "long name", err, syscall.ENAMETOOLONG)

		// renames
		sub, err := f.Mkdir(d, "sub", 0o755, 0, 0)
		must(t, err)
		wantErrno(t, "dir into itself", f.Rename(TopLevel, "d", sub, "d", 0), syscall.EINVAL)
		wantErrno(t, "noreplace", f.Rename(d, "fifo", d, "sock", RenameNoReplace), syscall.EEXIST)
		must(t, f.Rename(d, "fifo", sub, "fifo2", 0))
		must(t, f.Rename(d, "sock", sub, "fifo2", 0))     // replaces
		must(t, f.Rename(d, "a2", TopLevel, "a-hard", 0)) // same inode: no-op
		must(t, f.Rename(d, "link", sub, "fifo2", RenameExchange))
		wantErrno(t, "dir over file", f.Rename(d, "sub", d, "a", 0), syscall.ENOTDIR)
		wantErrno(t, "file over dir", f.Rename(d, "a", d, "sub", 0), syscall.EISDIR)
		_, err = f.Mkdir(TopLevel, "empty", 0o755, 0, 0)
		must(t, err)
		must(t, f.Rename(d, "sub", TopLevel, "empty", 0)) // dir over empty dir
		want := map[string]string{
			"a-hard":      "file 644 n3 s0",
			"d":           "dir 750 n1",
			"d/a":         "file 644 n3 s0",
			"d/a2":        "file 644 n3 s0",
			"d/dev":       "chr 600 n1 rdev 4194369",
			"d/link":      "sock 600 n1",
			"empty":       "dir 755 n1",
			"empty/fifo2": "link 777 n1 -> ../some/where",
		}
		check := func() {
			got := listTree(t, f, TopLevel, "")
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("tree:\n got %v\nwant %v", got, want)
			}
		}
		check()
		must(t, f.Close())
		checktest.Image(t, img)
		f = openImage(t, img, Options{})
		check()
		must(t, f.Unlink(d, "a"))
		must(t, f.Unlink(d, "a2"))
		must(t, f.Unlink(TopLevel, "a-hard"))
		must(t, f.Rename(TopLevel, "empty", d, "e", 0))
		must(t, f.Unlink(d, "dev"))
		must(t, f.Close())
		checktest.Image(t, img)
	})
}

// listTree describes every name below dir: type, permissions, links, size.
func listTree(t *testing.T, f *FS, dir ondisk.InodeRef, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ents, err := f.ReadDir(dir)
	must(t, err)
	var dsize uint64
	for _, e := range ents {
		dsize += 2 * uint64(len(e.Name))
		p := prefix + e.Name
		id := e.Target(dir.Root)
		x, err := f.Stat(id)
		must(t, err)
		if item.FTFromMode(x.Mode) != e.Type {
			t.Fatalf("%s: entry type %d, inode mode %o", p, e.Type, x.Mode)
		}
		var s string
		switch x.Mode & item.SIFMT {
		case item.SIFDIR:
			s = "dir"
		case item.SIFREG:
			s = "file"
		case item.SIFLNK:
			s = "link"
		case item.SIFCHR:
			s = "chr"
		case item.SIFBLK:
			s = "blk"
		case item.SIFIFO:
			s = "fifo"
		case item.SIFSOCK:
			s = "sock"
		}
		s += fmt.Sprintf(" %o n%d", x.Mode&0o7777, x.NLink)
		switch {
		case isReg(x.Mode):
			s += fmt.Sprintf(" s%d", x.Size)
			checkNBytes(t, f, id)
		case isLnk(x.Mode):
			target, err := f.Readlink(id)
			must(t, err)
			s += " -> " + target
		case x.Rdev != 0:
			s += fmt.Sprintf(" rdev %d", x.Rdev)
		}
		out[p] = s
		if isDir(x.Mode) {
			for k, v := range listTree(t, f, id, p+"/") {
				out[k] = v
			}
		}
	}
	x, err := f.Stat(dir)
	must(t, err)
	if x.Size != dsize {
		t.Fatalf("directory %v: size %d, names account for %d", dir, x.Size, dsize)
	}
	return out
}

// shadow is a file and what it should hold.
type shadow struct {
	t    *testing.T
	f    *FS
	id   ondisk.InodeRef
	want []byte
}

func (s *shadow) check(what string) {
	s.t.Helper()
	got := readAll(s.t, s.f, s.id)
	if !bytes.Equal(got, s.want) {
		i := 0
		for i < len(got) && i < len(s.want) && got[i] == s.want[i] {
			i++
		}
		s.t.Fatalf("after %s: content differs at %d (len got %d want %d)", what, i, len(got), len(s.want))
	}
	checkNBytes(s.t, s.f, s.id)
}

func (s *shadow) write(off int, n int, fill byte) {
	s.t.Helper()
	data := bytes.Repeat([]byte{fill}, n)
	for i := range data {
		data[i] += byte(i / 512)
	}
	_, err := s.f.WriteAt(s.id, uint64(off), data)
	must(s.t, err)
	if off+n > len(s.want) {
		s.want = append(s.want, make([]byte, off+n-len(s.want))...)
	}
	copy(s.want[off:], data)
	s.check(fmt.Sprintf("write %d+%d", off, n))
}

func (s *shadow) truncate(n int) {
	s.t.Helper()
	must(s.t, s.f.Truncate(s.id, uint64(n)))
	if n < len(s.want) {
		s.want = s.want[:n]
	} else {
		s.want = append(s.want, make([]byte, n-len(s.want))...)
	}
	s.check(fmt.Sprintf("truncate %d", n))
}

func (s *shadow) fallocate(mode uint32, off, n int) {
	s.t.Helper()
	must(s.t, s.f.Fallocate(s.id, mode, uint64(off), uint64(n)))
	end := off + n
	if mode&FallocPunchHole != 0 {
		clear(s.want[min(off, len(s.want)):min(end, len(s.want))])
	} else if mode&FallocKeepSize == 0 && end > len(s.want) {
		s.want = append(s.want, make([]byte, end-len(s.want))...)
	}
	s.check(fmt.Sprintf("fallocate %#x %d+%d", mode, off, n))
}

func TestWriteTruncateFallocate(t *testing.T) {
	for _, alg := range []compress.Alg{compress.None, compress.Zstd} {
		t.Run(alg.String(), func(t *testing.T) {
			forConfigs(t, func(t *testing.T, img string, o imageOpts) {
				f := openImage(t, img, Options{Compress: alg})
				id, err := f.Create(TopLevel, "f", 0o644, 0, 0, 0)
				must(t, err)
				s := &shadow{t: t, f: f, id: id}
				s.write(0, 100, 'a')        // inline
				s.write(50, 100, 'b')       // still inline
				s.write(1000, 10, 'c')      // inline with a gap
				s.write(3000, 2000, 'd')    // past a sector: regular
				s.write(10, 5, 'e')         // inside the first sector
				s.truncate(4500)            // shrink inside a sector
				s.truncate(20000)           // grow
				s.write(100000, 70000, 'f') // sparse, several sectors
				s.write(8190, 8, 'g')       // across a sector boundary
				s.fallocate(FallocKeepSize|FallocPunchHole, 5000, 20000)
				s.fallocate(0, 200000, 50000)
				s.write(210000, 1000, 'h') // into preallocated space
				s.fallocate(FallocKeepSize, 300000, 8192)
				s.fallocate(FallocKeepSize|FallocPunchHole, 100, 3)
				s.truncate(150001)
				s.write(0, 300000, 'i')
				s.truncate(0)
				s.write(0, 10, 'j')
				must(t, f.Close())
				checktest.Image(t, img)
				f = openImage(t, img, Options{Compress: alg})
				s.f = f
				s.check("reopen")
				must(t, f.Close())
			})
		})
	}
}

func TestClone(t *testing.T) {
	forConfigs(t, func(t *testing.T, img string, o imageOpts) {
		f := openImage(t, img, Options{})
		ss := int(f.SectorSize())
		a, err := f.Create(TopLevel, "a", 0o644, 0, 0, 0)
		must(t, err)
		b, err := f.Create(TopLevel, "b", 0o644, 0, 0, 0)
		must(t, err)
		sa := &shadow{t: t, f: f, id: a}
		sb := &shadow{t: t, f: f, id: b}
		sa.write(0, 10*ss+100, 'a')
		sb.write(0, 3*ss, 'b')
		clone := func(src, dst *shadow, so, do, n int) {
			t.Helper()
			must(t, f.Clone(src.id, uint64(so), dst.id, uint64(do), uint64(n)))
			data := append([]byte(nil), src.want[so:so+n]...)
			if do+n > len(dst.want) {
				dst.want = append(dst.want, make([]byte, do+n-len(dst.want))...)
			}
			copy(dst.want[do:], data)
			dst.check(fmt.Sprintf("clone %d+%d to %d", so, n, do))
			src.check("clone source")
		}
		clone(sa, sb, ss, ss, 2*ss)          // middle of an extent over another
		clone(sa, sb, 8*ss, 20*ss, 2*ss+100) // to EOF, unaligned, past dst end
		clone(sa, sa, 0, 12*ss, 4*ss)        // within one file
		clone(sb, sa, 0, 0, ss)              // back
		wantErrno(t, "unaligned", f.Clone(a, 1, b, 0, uint64(ss)), syscall.EINVAL)
		wantErrno(t, "overlap", f.Clone(a, 0, a, uint64(ss), uint64(2*ss)), syscall.EINVAL)
		sb.write(ss+10, 20, 'z') // COW of a shared extent
		sa.check("after writing the clone")
		must(t, f.Close())
		checktest.Image(t, img)
	})
}

func TestXattrsAndAttrs(t *testing.T) {
	forConfigs(t, func(t *testing.T, img string, o imageOpts) {
		f := openImage(t, img, Options{})
		id, err := f.Create(TopLevel, "f", 0o644, 0, 0, 0)
		must(t, err)
		must(t, f.SetXattr(id, "user.a", []byte("1"), 0))
		must(t, f.SetXattr(id, "user.b", bytes.Repeat([]byte("x"), 1000), 0))
		wantErrno(t, "create existing", f.SetXattr(id, "user.a", nil, XattrCreate), syscall.EEXIST)
		wantErrno(t, "replace missing", f.SetXattr(id, "user.c", nil, XattrReplace), syscall.ENODATA)
		must(t, f.SetXattr(id, "user.a", []byte("22"), XattrReplace))
		must(t, f.SetXattr(TopLevel, "user.dir", []byte("d"), 0))
		// As the VFS: no user attributes on a symlink, no unknown namespace.
		sl, err := f.Symlink(TopLevel, "sl", "f", 0, 0)
		must(t, err)
		wantErrno(t, "user xattr on symlink", f.SetXattr(sl, "user.a", []byte("1"), 0), syscall.EPERM)
		must(t, f.SetXattr(sl, "trusted.a", []byte("1"), 0))
		wantErrno(t, "no namespace", f.SetXattr(id, "noprefix", []byte("1"), 0), syscall.EOPNOTSUPP)
		wantErrno(t, "unknown system name", f.SetXattr(id, "system.foo", []byte("1"), 0), syscall.EOPNOTSUPP)
		must(t, f.RemoveXattr(id, "user.b"))
		wantErrno(t, "remove missing", f.RemoveXattr(id, "user.b"), syscall.ENODATA)
		at := time.Unix(1234567890, 123456789)
		_, err = f.Setattr(id, SetAttr{Valid: SetMode | SetUID | SetGID | SetAtime | SetMtime | SetCtime,
			Mode: 0o4711, UID: 7, GID: 8, Atime: at, Mtime: at.Add(time.Second), Ctime: at.Add(2 * time.Second)})
		must(t, err)
		must(t, f.Close())
		checktest.Image(t, img)
		f = openImage(t, img, Options{})
		defer f.Close()
		v, err := f.GetXattr(id, "user.a")
		must(t, err)
		names, err := f.ListXattr(id)
		must(t, err)
		if string(v) != "22" || fmt.Sprint(names) != "[user.a]" {
			t.Fatalf("xattrs: %q %v", v, names)
		}
		x, err := f.Stat(id)
		must(t, err)
		if x.Mode != 0o104711 || x.UID != 7 || x.GID != 8 || x.Atime != item.TimespecOf(at) ||
			x.Mtime.Sec != at.Unix()+1 || x.Ctime.Sec != at.Unix()+2 || x.Ctime.Nsec != 123456789 {
			t.Fatalf("attrs: %+v", x)
		}
	})
}

func TestManyLinks(t *testing.T) {
	for _, o := range []imageOpts{{nodesize: "4096"}, {nodesize: "4096", features: "^extref"}} {
		t.Run(o.String(), func(t *testing.T) {
			img := newImage(t, o)
			f := openImage(t, img, Options{})
			id, err := f.Create(TopLevel, "f", 0o644, 0, 0, 0)
			must(t, err)
			n := 0
			for i := 0; i < 200; i++ {
				err = f.Link(id, TopLevel, fmt.Sprintf("%s-%03d", strings.Repeat("l", 200), i))
				if err != nil {
					break
				}
				n++
			}
			if o.features == "^extref" {
				wantErrno(t, "link without extref", err, syscall.EMLINK)
			} else {
				must(t, err)
			}
			x, err := f.Stat(id)
			must(t, err)
			if int(x.NLink) != n+1 {
				t.Fatalf("nlink %d, want %d", x.NLink, n+1)
			}
			must(t, f.Close())
			checktest.Image(t, img)
			if o.features == "" && !strings.Contains(dumpTree(t, img, "fs"), "INODE_EXTREF") {
				t.Fatal("no INODE_EXTREF items written")
			}
			f = openImage(t, img, Options{})
			for i := 0; i < n; i += 2 {
				must(t, f.Unlink(TopLevel, fmt.Sprintf("%s-%03d", strings.Repeat("l", 200), i)))
			}
			must(t, f.Close())
			checktest.Image(t, img)
		})
	}
}

func TestSubvolumes(t *testing.T) {
	forConfigs(t, func(t *testing.T, img string, o imageOpts) {
		f := openImage(t, img, Options{})
		d, err := f.Mkdir(TopLevel, "d", 0o755, 0, 0)
		must(t, err)
		sv, err := f.CreateSubvolume(d, "sv", 0o755, 0, 0)
		must(t, err)
		svRoot := ondisk.InodeRef{Root: sv, Ino: RootDirIno}
		fid, err := f.Create(svRoot, "file", 0o644, 0, 0, 0)
		must(t, err)
		_, err = f.WriteAt(fid, 0, bytes.Repeat([]byte("s"), 10000))
		must(t, err)
		must(t, f.Commit())
		snap, err := f.Snapshot(sv, TopLevel, "snap", false)
		must(t, err)
		ro, err := f.Snapshot(sv, TopLevel, "ro", true)
		must(t, err)
		_, err = f.Create(ondisk.InodeRef{Root: ro, Ino: RootDirIno}, "x", 0o644, 0, 0, 0)
		wantErrno(t, "create in read-only snapshot", err, syscall.EROFS)
		_, err = f.WriteAt(ondisk.InodeRef{Root: snap, Ino: fid.Ino}, 5, []byte("changed"))
		must(t, err)
		wantErrno(t, "link across subvolumes", f.Link(fid, TopLevel, "x"), syscall.EXDEV)
		wantErrno(t, "rename across subvolumes", f.Rename(svRoot, "file", TopLevel, "x", 0), syscall.EXDEV)
		wantErrno(t, "unlink subvolume", f.Unlink(d, "sv"), syscall.EISDIR)
		nested, err := f.CreateSubvolume(ondisk.InodeRef{Root: snap, Ino: RootDirIno}, "nested", 0o755, 0, 0)
		must(t, err)
		wantErrno(t, "delete subvolume with a nested one", f.DeleteSubvolume(TopLevel, "snap"), syscall.ENOTEMPTY)
		must(t, f.Rename(ondisk.InodeRef{Root: snap, Ino: RootDirIno}, "nested", ondisk.InodeRef{Root: snap, Ino: RootDirIno}, "moved", 0))
		subs, err := f.ListSubvolumes()
		must(t, err)
		var paths []string
		for _, s := range subs {
			paths = append(paths, fmt.Sprintf("%d:%s:%v", s.ID, s.Path, s.Readonly))
		}
		want := fmt.Sprintf("[%d:d/sv:false %d:snap:false %d:ro:true %d:snap/moved:false]", sv, snap, ro, nested)
		if fmt.Sprint(paths) != want {
			t.Fatalf("subvolumes %v, want %v", paths, want)
		}
		must(t, f.Close())
		checktest.Image(t, img)
		root := dumpTree(t, img, "fs")
		if !strings.Contains(root, fmt.Sprintf("location key (%d ROOT_ITEM 0) type DIR", sv)) ||
			!strings.Contains(root, fmt.Sprintf("location key (%d ROOT_ITEM 18446744073709551615) type DIR", snap)) {
			t.Fatalf("subvolume entries in the fs tree:\n%s", root)
		}
		f = openImage(t, img, Options{})
		must(t, f.Rmdir(ondisk.InodeRef{Root: snap, Ino: RootDirIno}, "moved")) // empty subvolume: rmdir deletes it
		must(t, f.DeleteSubvolume(TopLevel, "snap"))
		must(t, f.DeleteSubvolume(TopLevel, "ro"))
		got := readAll(t, f, fid)
		if !bytes.Equal(got, bytes.Repeat([]byte("s"), 10000)) {
			t.Fatal("subvolume file changed by its snapshot")
		}
		must(t, f.Close())
		checktest.Image(t, img)
	})
}
