package fusefs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"golang.org/x/sys/unix"
)

// wantErrno fails unless err carries want.
func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if got := errnoOfErr(err); got != want {
		t.Errorf("%s: got %v, want %v", what, err, want)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// withSubvol adds subvolume "sub" (with file "sub/f") to img through fsops.
func withSubvol(t *testing.T, img string) {
	t.Helper()
	f, err := fsops.OpenImage(img, fsops.Options{})
	must(t, err)
	id, err := f.CreateSubvolume(ondisk.InodeRef{Root: 5, Ino: fsops.RootDirIno}, "sub", 0o755, 0, 0)
	must(t, err)
	fid, err := f.Create(ondisk.InodeRef{Root: id, Ino: fsops.RootDirIno}, "f", 0o644, 0, 0, 0)
	must(t, err)
	_, err = f.WriteAt(fid, 0, []byte("in a subvolume"))
	must(t, err)
	must(t, f.Close())
}

// TestNamespaceErrors checks each operation's error cases through the mount.
func TestNamespaceErrors(t *testing.T) {
	needFuse(t)
	img := newImage(t, 512<<20)
	withSubvol(t, img)
	tm := mountImage(t, img, Options{})
	p := tm.path

	must(t, os.Mkdir(p("d"), 0o755))
	wantErrno(t, "mkdir existing", os.Mkdir(p("d"), 0o755), syscall.EEXIST)
	must(t, os.WriteFile(p("d", "f"), []byte("x"), 0o644))
	wantErrno(t, "rmdir non-empty", syscall.Rmdir(p("d")), syscall.ENOTEMPTY)
	wantErrno(t, "unlink missing", syscall.Unlink(p("nope")), syscall.ENOENT)
	wantErrno(t, "unlink directory", syscall.Unlink(p("d")), syscall.EISDIR)
	wantErrno(t, "rmdir file", syscall.Rmdir(p("d", "f")), syscall.ENOTDIR)
	wantErrno(t, "open dir for writing", func() error { _, err := os.OpenFile(p("d"), os.O_WRONLY, 0); return err }(), syscall.EISDIR)
	wantErrno(t, "create in file", os.WriteFile(p("d", "f", "g"), nil, 0o644), syscall.ENOTDIR)
	long := strings.Repeat("n", 256)
	wantErrno(t, "create long name", os.WriteFile(p(long), nil, 0o644), syscall.ENAMETOOLONG)
	wantErrno(t, "mkdir long name", os.Mkdir(p(long), 0o755), syscall.ENAMETOOLONG)
	_, err := os.Lstat(p(long))
	wantErrno(t, "lookup long name", err, syscall.ENAMETOOLONG)
	must(t, os.WriteFile(p(strings.Repeat("m", 255)), []byte("max"), 0o644))

	// rename flags
	must(t, os.WriteFile(p("a"), []byte("A"), 0o644))
	must(t, os.WriteFile(p("b"), []byte("B"), 0o644))
	wantErrno(t, "RENAME_NOREPLACE onto existing", unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("b"), unix.RENAME_NOREPLACE), syscall.EEXIST)
	must(t, unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("b"), unix.RENAME_EXCHANGE))
	if a, _ := os.ReadFile(p("a")); string(a) != "B" {
		t.Errorf("after RENAME_EXCHANGE a = %q, want B", a)
	}
	must(t, unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("c"), unix.RENAME_NOREPLACE))
	wantErrno(t, "RENAME_EXCHANGE with missing", unix.Renameat2(unix.AT_FDCWD, p("a"), unix.AT_FDCWD, p("b"), unix.RENAME_EXCHANGE), syscall.ENOENT)
	wantErrno(t, "rename dir into itself", os.Rename(p("d"), p("d", "sub")), syscall.EINVAL)
	must(t, os.Mkdir(p("e"), 0o755))
	wantErrno(t, "rename dir over non-empty dir", unix.Rename(p("e"), p("d")), syscall.ENOTEMPTY)
	wantErrno(t, "rename file over dir", unix.Rename(p("c"), p("e")), syscall.EISDIR)
	wantErrno(t, "rename dir over file", unix.Rename(p("e"), p("c")), syscall.ENOTDIR)
	wantErrno(t, "link a directory", os.Link(p("d"), p("dlink")), syscall.EPERM)

	// subvolume boundaries: btrfs refuses links and renames across them
	if b, err := os.ReadFile(p("sub", "f")); err != nil || string(b) != "in a subvolume" {
		t.Fatalf("read sub/f: %q %v", b, err)
	}
	wantErrno(t, "link across subvolumes", os.Link(p("sub", "f"), p("f2")), syscall.EXDEV)
	wantErrno(t, "rename across subvolumes", os.Rename(p("sub", "f"), p("f3")), syscall.EXDEV)
	var sr, sf, top unix.Stat_t
	must(t, unix.Lstat(p(), &top))
	must(t, unix.Lstat(p("sub"), &sr))
	must(t, unix.Lstat(p("sub", "f"), &sf))
	if top.Ino != 256 || sr.Ino == 256 || sr.Ino == top.Ino || sf.Ino == 257 {
		t.Errorf("inode numbers: top %d, subvolume root %d, file in it %d: want 256, distinct, not the bare 257",
			top.Ino, sr.Ino, sf.Ino)
	}
	finish(t, tm, img)
}

// TestFileOps covers data, attributes, links, xattrs, fallocate, seek, statfs.
func TestFileOps(t *testing.T) {
	needFuse(t)
	img := newImage(t, 1<<30)
	tm := mountImage(t, img, Options{})
	p := tm.path

	// hard links, symlinks, device nodes, fifos
	must(t, os.WriteFile(p("f"), []byte("hello"), 0o640))
	must(t, os.Link(p("f"), p("g")))
	var st unix.Stat_t
	must(t, unix.Lstat(p("g"), &st))
	if st.Nlink != 2 {
		t.Errorf("nlink after link = %d", st.Nlink)
	}
	must(t, os.Symlink("target/of/link", p("l")))
	if s, err := os.Readlink(p("l")); err != nil || s != "target/of/link" {
		t.Errorf("readlink = %q %v", s, err)
	}
	must(t, unix.Mknod(p("chr"), unix.S_IFCHR|0o600, int(unix.Mkdev(4, 70000))))
	must(t, unix.Lstat(p("chr"), &st))
	if unix.Major(st.Rdev) != 4 || unix.Minor(st.Rdev) != 70000 {
		t.Errorf("rdev %d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	must(t, unix.Mkfifo(p("fifo"), 0o644))

	// attributes
	must(t, os.Chmod(p("f"), 0o600))
	must(t, os.Chown(p("f"), 1234, 5678))
	mt := time.Date(2001, 2, 3, 4, 5, 6, 789, time.UTC)
	must(t, os.Chtimes(p("f"), mt, mt))
	must(t, unix.Lstat(p("f"), &st))
	if st.Mode&0o7777 != 0o600 || st.Uid != 1234 || st.Gid != 5678 || st.Mtim.Sec != mt.Unix() || st.Mtim.Nsec != 789 {
		t.Errorf("attributes: mode %o uid %d gid %d mtime %d.%d", st.Mode, st.Uid, st.Gid, st.Mtim.Sec, st.Mtim.Nsec)
	}
	// buffered write then utimes: the explicit time must stay
	must(t, os.WriteFile(p("w"), bytes.Repeat([]byte("w"), 100000), 0o644))
	must(t, os.Chtimes(p("w"), mt, mt))
	must(t, tm.Sync())
	must(t, unix.Lstat(p("w"), &st))
	if st.Mtim.Sec != mt.Unix() {
		t.Errorf("mtime after write, utimes, sync: %d, want %d", st.Mtim.Sec, mt.Unix())
	}

	// truncate up and down, with buffered data
	f, err := os.OpenFile(p("t"), os.O_CREATE|os.O_RDWR, 0o644)
	must(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{1}, 10000), 0)
	must(t, err)
	must(t, f.Truncate(5000))
	must(t, f.Truncate(20000))
	buf := make([]byte, 20000)
	_, err = f.ReadAt(buf, 0)
	must(t, err)
	want := append(bytes.Repeat([]byte{1}, 5000), make([]byte, 15000)...)
	if !bytes.Equal(buf, want) {
		t.Errorf("content after truncate down and up differs")
	}

	// fallocate, punch, SEEK_DATA / SEEK_HOLE
	must(t, unix.Fallocate(int(f.Fd()), 0, 0, 1<<20))
	must(t, f.Sync())
	if fi, _ := f.Stat(); fi.Size() != 1<<20 {
		t.Errorf("size after fallocate = %d", fi.Size())
	}
	must(t, unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 1<<20, 1<<20))
	if fi, _ := f.Stat(); fi.Size() != 1<<20 {
		t.Errorf("size after keep-size fallocate = %d", fi.Size())
	}
	_, err = f.WriteAt(bytes.Repeat([]byte{2}, 8192), 8192)
	must(t, err)
	must(t, unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, 0, 4096))
	if d, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_DATA); err != nil || d != 4096 {
		t.Errorf("SEEK_DATA from 0 = %d %v, want 4096", d, err)
	}
	if h, err := unix.Seek(int(f.Fd()), 4096, unix.SEEK_HOLE); err != nil || h != 16384 {
		t.Errorf("SEEK_HOLE from 4096 = %d %v, want 16384 (prealloc counts as a hole)", h, err)
	}
	_, err = unix.Seek(int(f.Fd()), 2<<20, unix.SEEK_DATA)
	wantErrno(t, "SEEK_DATA past EOF", err, syscall.ENXIO)
	must(t, unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_ZERO_RANGE, 8192, 4096))
	if b := make([]byte, 4096); func() bool { f.ReadAt(b, 8192); return !bytes.Equal(b, make([]byte, 4096)) }() {
		t.Errorf("zero range reads back non-zero bytes")
	}
	wantErrno(t, "fallocate collapse range", unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_COLLAPSE_RANGE, 0, 4096), syscall.EOPNOTSUPP)
	f.Close()

	// xattrs
	must(t, unix.Setxattr(p("f"), "user.a", []byte("1"), 0))
	wantErrno(t, "XATTR_CREATE existing", unix.Setxattr(p("f"), "user.a", []byte("2"), unix.XATTR_CREATE), syscall.EEXIST)
	wantErrno(t, "XATTR_REPLACE missing", unix.Setxattr(p("f"), "user.b", []byte("2"), unix.XATTR_REPLACE), syscall.ENODATA)
	_, err = unix.Getxattr(p("f"), "user.zz", make([]byte, 10))
	wantErrno(t, "getxattr missing", err, syscall.ENODATA)
	must(t, unix.Setxattr(p("f"), "user.big", bytes.Repeat([]byte("v"), 100), 0))
	_, err = unix.Getxattr(p("f"), "user.big", make([]byte, 10))
	wantErrno(t, "getxattr small buffer", err, syscall.ERANGE)
	must(t, unix.Removexattr(p("f"), "user.big"))
	wantErrno(t, "removexattr missing", unix.Removexattr(p("f"), "user.big"), syscall.ENODATA)
	lb := make([]byte, 100)
	n, err := unix.Listxattr(p("f"), lb)
	must(t, err)
	if string(lb[:n]) != "user.a\x00" {
		t.Errorf("listxattr = %q", lb[:n])
	}

	// statfs follows what is written
	var s1, s2 unix.Statfs_t
	must(t, unix.Statfs(p(), &s1))
	must(t, os.WriteFile(p("big"), bytes.Repeat([]byte{3}, 64<<20), 0o644))
	must(t, tm.Sync())
	must(t, unix.Statfs(p(), &s2))
	used := int64(s1.Bfree-s2.Bfree) * s2.Bsize
	if used < 60<<20 || used > 80<<20 || s2.Blocks*uint64(s2.Bsize) != 1<<30 || s2.Namelen != 255 {
		t.Errorf("statfs: 64 MiB written used %d bytes; blocks %d of %d; namelen %d", used, s2.Blocks, s2.Bsize, s2.Namelen)
	}
	finish(t, tm, img)
}

// TestReadOnlyMount serves the read side: contents match, writes fail with EROFS.
func TestReadOnlyMount(t *testing.T) {
	needFuse(t)
	img := newImage(t, 512<<20)
	withSubvol(t, img)
	rw := mountImage(t, img, Options{})
	must(t, os.MkdirAll(rw.path("a", "b"), 0o755))
	must(t, os.WriteFile(rw.path("a", "b", "f"), bytes.Repeat([]byte("0123456789"), 50000), 0o644))
	must(t, os.Symlink("b/f", rw.path("a", "l")))
	must(t, unix.Setxattr(rw.path("a"), "user.x", []byte("y"), 0))
	want := takeManifest(t, rw.dir)
	rw.unmount()

	ro := mountImage(t, img, Options{ReadOnly: true})
	if d := want.diff(takeManifest(t, ro.dir)); len(d) > 0 {
		t.Errorf("read-only mount differs from the read-write one:\n%s", strings.Join(d, "\n"))
	}
	wantErrno(t, "create on ro", os.WriteFile(ro.path("new"), nil, 0o644), syscall.EROFS)
	wantErrno(t, "write on ro", func() error { _, err := os.OpenFile(ro.path("a", "b", "f"), os.O_WRONLY, 0); return err }(), syscall.EROFS)
	wantErrno(t, "mkdir on ro", os.Mkdir(ro.path("x"), 0o755), syscall.EROFS)
	// a second read-only mount is fine, a read-write one is refused
	ro2 := mountImage(t, img, Options{ReadOnly: true})
	ro2.unmount()
	if _, err := New(img, t.TempDir(), Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("read-write mount beside a read-only one: %v, want ErrLocked", err)
	}
	ro.unmount()
	checktest.Image(t, img)
}

// TestSecondMountRefused: the image lock refuses a second mount.
func TestSecondMountRefused(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	_, err := New(img, t.TempDir(), Options{})
	if want := "in use by a gobtrfs mount on " + tm.dir; !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), want) {
		t.Errorf("second mount: %v, want a clear %q error", err, want)
	}
	_, err = New(img, t.TempDir(), Options{ReadOnly: true})
	if !errors.Is(err, ErrLocked) {
		t.Errorf("read-only mount beside a read-write one: %v, want ErrLocked", err)
	}
	finish(t, tm, img)
}

// TestUnlinkedOpenFile: an open file keeps working after its last name
// goes, and disappears for good at the last close.
func TestUnlinkedOpenFile(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	f, err := os.Create(tm.path("x"))
	must(t, err)
	_, err = f.Write([]byte("still here"))
	must(t, err)
	must(t, os.Remove(tm.path("x")))
	_, err = f.Write([]byte(" after unlink"))
	must(t, err)
	b := make([]byte, 100)
	n, _ := f.ReadAt(b, 0)
	if string(b[:n]) != "still here after unlink" {
		t.Errorf("read after unlink: %q", b[:n])
	}
	var st unix.Stat_t
	must(t, unix.Fstat(int(f.Fd()), &st))
	if st.Nlink != 0 {
		t.Errorf("nlink after unlink = %d", st.Nlink)
	}
	if es, _ := os.ReadDir(tm.path()); len(es) != 0 {
		t.Errorf("root lists %v, want nothing (the hidden directory must not show)", es)
	}
	must(t, f.Close())
	// O_TMPFILE, then linked in
	fd, err := unix.Open(tm.path(), unix.O_TMPFILE|unix.O_RDWR, 0o600)
	must(t, err)
	_, err = unix.Write(fd, []byte("tmp"))
	must(t, err)
	must(t, unix.Linkat(fd, "", unix.AT_FDCWD, tm.path("fromtmp"), unix.AT_EMPTY_PATH))
	unix.Close(fd)
	if b, err := os.ReadFile(tm.path("fromtmp")); err != nil || string(b) != "tmp" {
		t.Errorf("linked tmpfile: %q %v", b, err)
	}
	finish(t, tm, img)
}

// TestFsyncDurable: after fsync returns, a copy of the image taken at that
// moment (as a crash would leave it) holds the data.
func TestFsyncDurable(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	data := bytes.Repeat([]byte("durable!"), 100000)
	f, err := os.Create(tm.path("d"))
	must(t, err)
	_, err = f.Write(data)
	must(t, err)
	must(t, f.Sync())
	crash := filepath.Join(t.TempDir(), "crash.img")
	b, err := os.ReadFile(img)
	must(t, err)
	must(t, os.WriteFile(crash, b, 0o644))
	f.Close()
	checktest.Image(t, crash)
	ro := mountImage(t, crash, Options{ReadOnly: true})
	got, err := os.ReadFile(ro.path("d"))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("fsynced data after a crash: %d bytes, %v", len(got), err)
	}
	ro.unmount()
	finish(t, tm, img)
}

// TestSubvolMount: subvol= and subvolid= pick the root; its inodes keep
// their btrfs numbers.
func TestSubvolMount(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	withSubvol(t, img)
	for _, o := range []Options{{Subvol: "sub"}, {Subvol: "/sub/", ReadOnly: true}, {SubvolID: 256}, {SubvolID: 256, ReadOnly: true}} {
		tm := mountImage(t, img, o)
		var st unix.Stat_t
		must(t, unix.Stat(tm.path("f"), &st))
		if b, err := os.ReadFile(tm.path("f")); err != nil || string(b) != "in a subvolume" || st.Ino != 257 {
			t.Errorf("%+v: f = %q %v, ino %d", o, b, err, st.Ino)
		}
		tm.unmount()
	}
	if _, err := New(img, t.TempDir(), Options{Subvol: "nope"}); err == nil {
		t.Errorf("subvol=nope mounted")
	}
	checktest.Image(t, img)
}
