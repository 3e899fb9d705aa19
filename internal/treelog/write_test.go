package treelog_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

var topDir = ondisk.InodeRef{Root: ondisk.FSTreeObjectID, Ino: fsops.RootDirIno}

// fileState is what the test expects of file a after the fsync.
type fileState struct {
	data  []byte
	xattr map[string]string
	also  map[string][]byte // other files the replay must show, with their content
	gone  []string          // paths the replay must not show
}

// logCase is one fsync case: prepare runs before the commit that makes a
// (and its directory) committed; change runs after, in the transaction the
// fsync logs.
type logCase struct {
	name       string
	path       string // the file fsync'd (default d/a)
	change     func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState
	wantLogged bool   // the fsync used the log tree
	logged     uint64 // fsyncs through the log (default 1 when wantLogged)
	reason     string // else: the fallback reason counted
}

func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var original = []byte("committed content of a\n")

func logCases() []logCase {
	return []logCase{
		{name: "overwrite", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			_, err := f.WriteAt(a, 0, []byte("OVERWRITTEN"))
			mustT(t, err)
			return fileState{data: append([]byte("OVERWRITTEN"), original[11:]...)}
		}},
		{name: "append", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			more := bytes.Repeat([]byte("appended "), 2000)
			_, err := f.WriteAt(a, uint64(len(original)), more)
			mustT(t, err)
			return fileState{data: append(append([]byte(nil), original...), more...)}
		}},
		{name: "xattr", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			mustT(t, f.SetXattr(a, "user.logged", []byte("yes"), 0))
			return fileState{data: original, xattr: map[string]string{"user.logged": "yes"}}
		}},
		{name: "truncate", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			mustT(t, f.Truncate(a, 5))
			return fileState{data: original[:5]}
		}},
		{name: "hole", path: "d/h", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// committed extents replaced by a hole (NO_HOLES: no item says
			// so in the tree): the log must carry the hole.
			d, _, err := f.Lookup(topDir, "d")
			mustT(t, err)
			h, _, err := f.Lookup(d, "h")
			mustT(t, err)
			mustT(t, f.Truncate(h, 0))
			mustT(t, f.Truncate(h, 64<<10))
			_, err = f.WriteAt(h, 8192, []byte("middle"))
			mustT(t, err)
			data := make([]byte, 64<<10)
			copy(data[8192:], "middle")
			return fileState{data: data}
		}},
		{name: "compressed", path: "d/h", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// a zstd extent over committed data: the log carries the
			// compressed extent and the checksums of its disk bytes.
			h := lookupPath(t, f, "d/h")
			f.SetCompress(compress.Zstd)
			defer f.SetCompress(compress.None)
			z := bytes.Repeat([]byte("zstd compresses this well. "), 2000)
			_, err := f.WriteAt(h, 4096, z)
			mustT(t, err)
			data := bytes.Repeat([]byte("h"), 64<<10)
			copy(data[4096:], z)
			return fileState{data: data}
		}},
		{name: "fsync-twice", wantLogged: true, logged: 2, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// a is logged, then changed and logged again: the second log
			// replaces the first (whose blocks are freed).
			_, err := f.WriteAt(a, 0, []byte("FIRST"))
			mustT(t, err)
			mustT(t, f.Fsync(a))
			_, err = f.WriteAt(a, 100000, []byte("SECOND"))
			mustT(t, err)
			data := make([]byte, 100006)
			copy(data, original)
			copy(data, "FIRST")
			copy(data[100000:], "SECOND")
			return fileState{data: data}
		}},
		{name: "logged-then-renamed", wantLogged: true, logged: 2, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// b is logged, then renamed: the next fsync (of a) logs b's
			// new name, and replay drops the old one.
			b, _, err := f.Lookup(topDir, "b")
			mustT(t, err)
			_, err = f.WriteAt(b, 0, []byte("B"))
			mustT(t, err)
			mustT(t, f.Fsync(b))
			mustT(t, f.Rename(topDir, "b", topDir, "b2", 0))
			_, err = f.WriteAt(a, 0, []byte("A"))
			mustT(t, err)
			return fileState{data: append([]byte("A"), original[1:]...), gone: []string{"b"}}
		}},
		{name: "new-file", path: "d/c", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			d := lookupPath(t, f, "d")
			c, err := f.Create(d, "c", 0o100644, 0, 0, 0)
			mustT(t, err)
			_, err = f.WriteAt(c, 0, []byte("new file"))
			mustT(t, err)
			return fileState{data: []byte("new file")}
		}},
		{name: "new-tree", path: "d/x/y/f", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// new directories above a new file are logged (their inode
			// items and names), not their other entries.
			d := lookupPath(t, f, "d")
			x, err := f.Mkdir(d, "x", 0o40755, 0, 0)
			mustT(t, err)
			y, err := f.Mkdir(x, "y", 0o40700, 0, 0)
			mustT(t, err)
			_, err = f.Create(x, "unsynced", 0o100644, 0, 0, 0)
			mustT(t, err)
			ff, err := f.Create(y, "f", 0o100600, 0, 0, 0)
			mustT(t, err)
			data := bytes.Repeat([]byte("deep "), 3000)
			_, err = f.WriteAt(ff, 0, data)
			mustT(t, err)
			return fileState{data: data}
		}},
		{name: "rename", path: "d/renamed", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			d := lookupPath(t, f, "d")
			mustT(t, f.Rename(d, "a", d, "renamed", 0))
			_, err := f.WriteAt(a, 0, []byte("R"))
			mustT(t, err)
			return fileState{data: append([]byte("R"), original[1:]...), gone: []string{"d/a"}}
		}},
		{name: "rename-across", path: "moved", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// the old directory is logged with a deletion range for the
			// old name.
			d := lookupPath(t, f, "d")
			mustT(t, f.Rename(d, "a", topDir, "moved", 0))
			return fileState{data: original, gone: []string{"d/a"}, also: map[string][]byte{"d/h": bytes.Repeat([]byte("h"), 64<<10)}}
		}},
		{name: "rename-over", path: "d/h", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// a replaces h, which is gone: replay unlinks h's name.
			d := lookupPath(t, f, "d")
			mustT(t, f.Rename(d, "a", d, "h", 0))
			return fileState{data: original, gone: []string{"d/a"}}
		}},
		{name: "name-taken", path: "d/a", reason: "name-conflict", change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// the new d/a has the name the old one (still alive as
			// d/old) has in the last commit: the kernel would log both;
			// we commit.
			d := lookupPath(t, f, "d")
			mustT(t, f.Rename(d, "a", d, "old", 0))
			c, err := f.Create(d, "a", 0o100644, 0, 0, 0)
			mustT(t, err)
			_, err = f.WriteAt(c, 0, []byte("second a"))
			mustT(t, err)
			return fileState{data: []byte("second a"), also: map[string][]byte{"d/old": original}}
		}},
		{name: "hardlink", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			mustT(t, f.Link(a, topDir, "alink"))
			_, err := f.WriteAt(a, 0, []byte("L"))
			mustT(t, err)
			data := append([]byte("L"), original[1:]...)
			return fileState{data: data, also: map[string][]byte{"alink": data}}
		}},
		{name: "subvolume", path: "sv/f", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// a file of another subvolume: its own log tree.
			_, err := f.WriteAt(lookupPath(t, f, "sv/f"), 0, []byte("IN A"))
			mustT(t, err)
			return fileState{data: []byte("IN A subvolume")}
		}},
		{name: "two-subvolumes", path: "sv/new", wantLogged: true, logged: 2, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// two log trees under the log root tree.
			_, err := f.WriteAt(a, 0, []byte("TOP"))
			mustT(t, err)
			mustT(t, f.Fsync(a))
			n, err := f.Create(lookupPath(t, f, "sv"), "new", 0o100644, 0, 0, 0)
			mustT(t, err)
			_, err = f.WriteAt(n, 0, []byte("new in sv"))
			mustT(t, err)
			return fileState{data: []byte("new in sv"), also: map[string][]byte{"d/a": append([]byte("TOP"), original[3:]...)}}
		}},
		{name: "rmdir-empty", path: "d", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// e2 was empty in the last commit: replay may unlink its name.
			mustT(t, f.Rmdir(topDir, "e2"))
			mustT(t, f.Fsync(topDir))
			return fileState{gone: []string{"e2"}, also: map[string][]byte{"d/a": original, "sv/f": []byte("in a subvolume")}}
		}},
		{name: "rmdir-emptied", path: "d", reason: "dir-removed", change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// e held x in the last commit: unlinking e's name at replay
			// would leave x behind in a deleted directory. Commit.
			mustT(t, f.Unlink(lookupPath(t, f, "e"), "x"))
			mustT(t, f.Rmdir(topDir, "e"))
			mustT(t, f.Fsync(topDir))
			return fileState{gone: []string{"e"}, also: map[string][]byte{"d/a": original}}
		}},
		{name: "dir-fsync", path: "d", wantLogged: true, change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// a directory logged whole: new entries (with their inodes,
			// a new subdirectory's too) and a removed one.
			d := lookupPath(t, f, "d")
			n1, err := f.Create(d, "n1", 0o100644, 0, 0, 0)
			mustT(t, err)
			_, err = f.WriteAt(n1, 0, []byte("n1 data"))
			mustT(t, err)
			sub, err := f.Mkdir(d, "sub", 0o40755, 0, 0)
			mustT(t, err)
			s, err := f.Create(sub, "s", 0o100644, 0, 0, 0)
			mustT(t, err)
			_, err = f.WriteAt(s, 0, []byte("in sub"))
			mustT(t, err)
			_, err = f.Symlink(d, "l", "n1", 0, 0)
			mustT(t, err)
			mustT(t, f.Unlink(d, "h"))
			return fileState{gone: []string{"d/h"}, also: map[string][]byte{"d/n1": []byte("n1 data"),
				"d/sub/s": []byte("in sub"), "d/a": original, "d/l": []byte("n1 data")}}
		}},
	}
}

// newLoggedImage makes an image with d/a committed (content original).
func newLoggedImage(t *testing.T) (string, *fsops.FS, ondisk.InodeRef) {
	img := filepath.Join(t.TempDir(), "img")
	testutil.Mkfs(t, img, 512<<20)
	f, err := fsops.OpenImage(img, fsops.Options{})
	mustT(t, err)
	t.Cleanup(func() { f.Close() })
	d, err := f.Mkdir(topDir, "d", 0o40755, 0, 0)
	mustT(t, err)
	a, err := f.Create(d, "a", 0o100644, 0, 0, 0)
	mustT(t, err)
	_, err = f.WriteAt(a, 0, original)
	mustT(t, err)
	h, err := f.Create(d, "h", 0o100644, 0, 0, 0)
	mustT(t, err)
	_, err = f.WriteAt(h, 0, bytes.Repeat([]byte("h"), 64<<10))
	mustT(t, err)
	e, err := f.Mkdir(topDir, "e", 0o40755, 0, 0)
	mustT(t, err)
	_, err = f.Create(e, "x", 0o100644, 0, 0, 0)
	mustT(t, err)
	_, err = f.Mkdir(topDir, "e2", 0o40755, 0, 0)
	mustT(t, err)
	sv, err := f.CreateSubvolume(topDir, "sv", 0o40755, 0, 0)
	mustT(t, err)
	svf, err := f.Create(ondisk.InodeRef{Root: sv, Ino: fsops.RootDirIno}, "f", 0o100644, 0, 0, 0)
	mustT(t, err)
	_, err = f.WriteAt(svf, 0, []byte("in a subvolume"))
	mustT(t, err)
	b, err := f.Create(topDir, "b", 0o100644, 0, 0, 0)
	mustT(t, err)
	// Room for the test's 64 MiB in chunks the commit knows: a log may
	// not point into a chunk of the running transaction (new-chunk).
	_, err = f.WriteAt(b, 0, make([]byte, 96<<20))
	mustT(t, err)
	mustT(t, f.Commit())
	mustT(t, f.Truncate(b, 1))
	mustT(t, f.Commit())
	return img, f, a
}

// lookupPath resolves a slash-separated path from the top directory.
func lookupPath(t *testing.T, f *fsops.FS, name string) ondisk.InodeRef {
	t.Helper()
	id := topDir
	for _, p := range strings.Split(name, "/") {
		var err error
		if id, _, err = f.Lookup(id, p); err != nil {
			t.Fatalf("lookup %s: %v", name, err)
		}
	}
	return id
}

// copyFile copies src (sparse) to a new file (the crash image) and
// returns its path.
func copyFile(t *testing.T, src string) string {
	dst := filepath.Join(t.TempDir(), "crash.img")
	if out, err := exec.Command("cp", "--sparse=always", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v %s", src, err, out)
	}
	return dst
}

func readSuper(t *testing.T, img string) *ondisk.Superblock {
	b := make([]byte, ondisk.SuperInfoSize)
	fd, err := os.Open(img)
	mustT(t, err)
	defer fd.Close()
	_, err = fd.ReadAt(b, int64(ondisk.SuperMirrorOffsets[0]))
	mustT(t, err)
	sb, err := ondisk.DecodeSuperblock(b)
	mustT(t, err)
	return sb
}

// TestFsyncLogsInode: fsync of a committed file while 64 MiB of another
// file is written (not synced) leaves a log tree and no commit; btrfs
// check accepts the crash copy; our replay and the kernel's show the
// fsync'd state; check is clean after the kernel's replay; the next commit
// drops the log.
func TestFsyncLogsInode(t *testing.T) {
	testutil.NeedProgs(t)
	for _, c := range logCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // its own image: waits on btrfs-progs and the kernel
			img, f, a := newLoggedImage(t)
			gen := readSuper(t, img).Generation
			// 64 MiB of another file, not synced.
			b, _, err := f.Lookup(topDir, "b")
			mustT(t, err)
			big := bytes.Repeat([]byte{0xb5}, 1<<20)
			for i := 0; i < 64; i++ {
				_, err := f.WriteAt(b, uint64(i)<<20, big)
				mustT(t, err)
			}
			want := c.change(t, f, a)
			name := c.path
			if name == "" {
				name = "d/a"
			}
			target := lookupPath(t, f, name)
			mustT(t, f.Fsync(target))
			st := f.FsyncStats()
			crash := copyFile(t, img) // the power cut, right after fsync
			sb := readSuper(t, crash)
			if c.logged == 0 && c.wantLogged {
				c.logged = 1
			}
			if c.wantLogged {
				if st.Logged != c.logged || sb.LogRoot == 0 || sb.Generation != gen {
					t.Fatalf("fsync: stats %+v, super log_root %d generation %d (before %d): want a log and no commit",
						st, sb.LogRoot, sb.Generation, gen)
				}
			} else if st.Commits[c.reason] != 1 || sb.LogRoot != 0 || sb.Generation == gen {
				t.Fatalf("fsync: stats %+v, super log_root %d generation %d: want a commit for %q", st, sb.LogRoot, sb.Generation, c.reason)
			}
			checktest.Image(t, crash)
			ourCheck(t, crash)
			// Our replay (internal/treelog Replay via OpenImage) on a copy.
			ours := copyFile(t, crash)
			checkOurs(t, ours, name, want)
			checktest.Image(t, ours)
			if testutil.HaveRootLoop() {
				checkKernel(t, crash, name, want)
				checktest.Image(t, crash)
			}
			// The next commit drops the log.
			mustT(t, f.Commit())
			mustT(t, f.Close())
			if sb := readSuper(t, img); sb.LogRoot != 0 {
				t.Fatalf("after commit: super log_root %d", sb.LogRoot)
			}
			checktest.Image(t, img)
			ourCheck(t, img)
		})
	}
}

// ourCheck runs internal/check (which also reads a pending log tree).
func ourCheck(t *testing.T, img string) {
	t.Helper()
	rep, err := check.ImageWith(img, check.Options{CheckDataCsum: true})
	if err != nil {
		t.Fatalf("internal/check %s: %v", img, err)
	}
	if rep.NumProblems > 0 {
		t.Fatalf("internal/check %s: %d problems: %v", img, rep.NumProblems, rep.Problems)
	}
}

// checkOurs opens img with fsops (which replays the log) and compares name
// and the other paths want names.
func checkOurs(t *testing.T, img, name string, want fileState) {
	t.Helper()
	f, err := fsops.OpenImage(img, fsops.Options{})
	if err != nil {
		t.Fatalf("our replay: open %s: %v", img, err)
	}
	defer func() { mustT(t, f.Close()) }()
	lookup := func(path string) (ondisk.InodeRef, error) {
		id := topDir
		for _, p := range strings.Split(path, "/") {
			if id, _, err = f.Lookup(id, p); err != nil {
				return id, err
			}
		}
		return id, nil
	}
	var content func(path string) ([]byte, error)
	content = func(path string) ([]byte, error) {
		id, err := lookup(path)
		if err != nil {
			return nil, err
		}
		ii, err := f.Stat(id)
		if err != nil {
			return nil, err
		}
		if ii.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := f.Readlink(id)
			if err != nil {
				return nil, err
			}
			return content(filepath.Join(filepath.Dir(path), target))
		}
		return f.ReadAt(id, 0, int(ii.Size))
	}
	id, err := lookup(name)
	if err != nil {
		t.Fatalf("our replay: lookup %s: %v", name, err)
	}
	ii, err := f.Stat(id)
	mustT(t, err)
	if ii.Mode&unix.S_IFMT != unix.S_IFDIR {
		got, err := f.ReadAt(id, 0, int(ii.Size))
		mustT(t, err)
		if !bytes.Equal(got, want.data) {
			t.Errorf("our replay: %s has %d bytes %.40q, want %d bytes %.40q", name, len(got), got, len(want.data), want.data)
		}
	}
	for k, v := range want.xattr {
		x, err := f.GetXattr(id, k)
		if err != nil || string(x) != v {
			t.Errorf("our replay: %s xattr %s = %q, %v; want %q", name, k, x, err, v)
		}
	}
	for p, v := range want.also {
		got, err := content(p)
		if err != nil || !bytes.Equal(got, v) {
			t.Errorf("our replay: %s has %.40q, %v; want %.40q", p, got, err, v)
		}
	}
	for _, p := range want.gone {
		if _, err := lookup(p); err == nil {
			t.Errorf("our replay: %s exists, want it gone", p)
		}
	}
}

// checkKernel mounts img (the kernel replays its log) and compares name.
func checkKernel(t *testing.T, img, name string, want fileState) {
	t.Helper()
	dir := testutil.LoopMount(t, img, "")
	if st, err := os.Stat(filepath.Join(dir, name)); err != nil {
		t.Errorf("kernel replay: %v", err)
	} else if !st.IsDir() {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("kernel replay: %v", err)
		} else if !bytes.Equal(got, want.data) {
			t.Errorf("kernel replay: %s has %d bytes %.40q, want %d bytes %.40q", name, len(got), got, len(want.data), want.data)
		}
	}
	for p, v := range want.also {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || !bytes.Equal(got, v) {
			t.Errorf("kernel replay: %s has %.40q, %v; want %.40q", p, got, err, v)
		}
	}
	for _, p := range want.gone {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("kernel replay: %s exists, want it gone", p)
		}
	}
	for k, v := range want.xattr {
		buf := make([]byte, 256)
		n, err := unix.Getxattr(filepath.Join(dir, name), k, buf)
		if err != nil || string(buf[:n]) != v {
			t.Errorf("kernel replay: %s xattr %s = %q, %v; want %q", name, k, buf[:max(n, 0)], err, v)
		}
	}
	if out, err := exec.Command("sync").CombinedOutput(); err != nil {
		t.Logf("sync: %v %s", err, out)
	}
	testutil.Unmount(t, dir)
	t.Logf("kernel replay of %s checked (%s)", img, name)
}

// TestFsyncLogGrows: 200 new files, each created, written and fsync'd in
// one transaction. Each fsync's log holds every one of them, but blocks
// the log on disk already has are used again: the last fsync writes only
// the few blocks at the log's end and on the path to its root. Our replay
// and the kernel's show all 200 files; btrfs check is clean.
func TestFsyncLogGrows(t *testing.T) {
	testutil.NeedProgs(t)
	img, f, _ := newLoggedImage(t)
	d := lookupPath(t, f, "d")
	want := map[string][]byte{}
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("n%03d", i)
		id, err := f.Create(d, name, 0o100644, 0, 0, 0)
		mustT(t, err)
		data := bytes.Repeat([]byte{byte(i)}, 4096+i)
		_, err = f.WriteAt(id, 0, data)
		mustT(t, err)
		mustT(t, f.Fsync(id))
		want["d/"+name] = data
	}
	st := f.FsyncStats()
	t.Logf("fsync stats: %d logged, %d blocks written, %d reused; last fsync wrote %d of %d blocks",
		st.Logged, st.Written, st.Reused, st.LastWritten, st.LastBlocks)
	if st.Logged != 200 {
		t.Fatalf("fsync stats %+v: want 200 fsyncs through the log", st)
	}
	// The last inode leaf, the last checksum leaf, the nodes above them
	// and the log root tree's leaf change; the rest is used again.
	if st.LastWritten > 5 || st.LastBlocks <= st.LastWritten || st.Reused == 0 {
		t.Errorf("last fsync wrote %d of its log's %d blocks: want only the changed ones written", st.LastWritten, st.LastBlocks)
	}
	crash := copyFile(t, img)
	testutil.CheckImage(t, crash, "--check-data-csum")
	ourCheck(t, crash)
	checkOurs(t, copyFile(t, crash), "d/n199", fileState{data: want["d/n199"], also: want})
	if testutil.HaveRootLoop() {
		checkKernel(t, crash, "d/n199", fileState{data: want["d/n199"], also: want})
		testutil.CheckImage(t, crash, "--check-data-csum")
	}
}

// TestFsyncBigDirectory: a committed directory of 3,000 entries (many
// leaves); in the next transaction one entry is added at the end, one in
// the first leaf is removed and one in the middle renamed, then the
// directory is fsync'd. The log covers only the leaves the transaction
// changed (several DIR_LOG_INDEX ranges); after our replay and the
// kernel's the directory holds exactly the expected names, and btrfs check
// is clean.
func TestFsyncBigDirectory(t *testing.T) {
	testutil.NeedProgs(t)
	img, f, _ := newLoggedImage(t)
	big, err := f.Mkdir(topDir, "big", 0o40755, 0, 0)
	mustT(t, err)
	want := map[string][]byte{}
	for i := 0; i < 3000; i++ {
		name := fmt.Sprintf("entry-with-a-long-name-%05d", i)
		_, err := f.Create(big, name, 0o100644, 0, 0, 0)
		mustT(t, err)
		want["big/"+name] = []byte{}
	}
	mustT(t, f.Commit())
	gen := readSuper(t, img).Generation
	n, err := f.Create(big, "new", 0o100644, 0, 0, 0)
	mustT(t, err)
	_, err = f.WriteAt(n, 0, []byte("new entry"))
	mustT(t, err)
	want["big/new"] = []byte("new entry")
	mustT(t, f.Unlink(big, "entry-with-a-long-name-00003"))
	delete(want, "big/entry-with-a-long-name-00003")
	mustT(t, f.Rename(big, "entry-with-a-long-name-01500", big, "renamed", 0))
	delete(want, "big/entry-with-a-long-name-01500")
	want["big/renamed"] = []byte{}
	mustT(t, f.Fsync(big))
	st := f.FsyncStats()
	crash := copyFile(t, img)
	if sb := readSuper(t, crash); st.Logged != 1 || sb.LogRoot == 0 || sb.Generation != gen {
		t.Fatalf("fsync stats %+v, log_root %d generation %d (before %d): want a log", st, sb.LogRoot, sb.Generation, gen)
	}
	t.Logf("fsync of a 3,000-entry directory: %d log blocks", st.LastBlocks)
	testutil.CheckImage(t, crash, "--check-data-csum")
	ourCheck(t, crash)
	gone := []string{"big/entry-with-a-long-name-00003", "big/entry-with-a-long-name-01500"}
	ours := fsopsView(t, copyFile(t, crash))
	var names []string
	for p := range ours {
		if strings.HasPrefix(p, "big/") {
			names = append(names, p)
		}
	}
	if len(names) != len(want) {
		t.Errorf("our replay: big has %d entries, want %d", len(names), len(want))
	}
	for p, v := range want {
		if got, ok := ours[p]; !ok || got != string(v) {
			t.Errorf("our replay: %s = %q (present %v), want %q", p, got, ok, v)
		}
	}
	for _, p := range gone {
		if _, ok := ours[p]; ok {
			t.Errorf("our replay: %s still there", p)
		}
	}
	if testutil.HaveRootLoop() {
		kern := kernelTree(t, crash)
		if d := testutil.DiffMaps(kern, ours); len(d) > 0 {
			t.Errorf("our replay differs from the kernel's:\n%s", strings.Join(d, "\n"))
		}
		testutil.CheckImage(t, crash, "--check-data-csum")
	}
}
