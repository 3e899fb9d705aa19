package treelog_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check"
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
		{name: "logged-then-renamed", reason: "logged-inode-changed", change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			// b is logged, then renamed: the next fsync (of a) must not
			// replay b's old name from the log: it commits instead.
			b, _, err := f.Lookup(topDir, "b")
			mustT(t, err)
			_, err = f.WriteAt(b, 0, []byte("B"))
			mustT(t, err)
			mustT(t, f.Fsync(b))
			mustT(t, f.Rename(topDir, "b", topDir, "b2", 0))
			_, err = f.WriteAt(a, 0, []byte("A"))
			mustT(t, err)
			return fileState{data: append([]byte("A"), original[1:]...)}
		}},
		{name: "new-file", path: "d/c", reason: "new-inode", change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			d, _, err := f.Lookup(topDir, "d")
			mustT(t, err)
			c, err := f.Create(d, "c", 0o100644, 0, 0, 0)
			mustT(t, err)
			_, err = f.WriteAt(c, 0, []byte("new file"))
			mustT(t, err)
			return fileState{data: []byte("new file")}
		}},
		{name: "rename", path: "d/renamed", reason: "names-changed", change: func(t *testing.T, f *fsops.FS, a ondisk.InodeRef) fileState {
			d, _, err := f.Lookup(topDir, "d")
			mustT(t, err)
			mustT(t, f.Rename(d, "a", d, "renamed", 0))
			_, err = f.WriteAt(a, 0, []byte("R"))
			mustT(t, err)
			return fileState{data: append([]byte("R"), original[1:]...)}
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
			testutil.CheckImage(t, crash, "--check-data-csum")
			ourCheck(t, crash)
			// Our replay (internal/treelog Replay via OpenImage) on a copy.
			ours := copyFile(t, crash)
			checkOurs(t, ours, name, want)
			testutil.CheckImage(t, ours, "--check-data-csum")
			if testutil.HaveRootLoop() {
				checkKernel(t, crash, name, want)
				testutil.CheckImage(t, crash, "--check-data-csum")
			}
			// The next commit drops the log.
			mustT(t, f.Commit())
			mustT(t, f.Close())
			if sb := readSuper(t, img); sb.LogRoot != 0 {
				t.Fatalf("after commit: super log_root %d", sb.LogRoot)
			}
			testutil.CheckImage(t, img, "--check-data-csum")
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

// checkOurs opens img with fsops (which replays the log) and compares name.
func checkOurs(t *testing.T, img, name string, want fileState) {
	t.Helper()
	f, err := fsops.OpenImage(img, fsops.Options{})
	if err != nil {
		t.Fatalf("our replay: open %s: %v", img, err)
	}
	defer func() { mustT(t, f.Close()) }()
	id := topDir
	for _, p := range strings.Split(name, "/") {
		id, _, err = f.Lookup(id, p)
		if err != nil {
			t.Fatalf("our replay: lookup %s: %v", name, err)
		}
	}
	ii, err := f.Stat(id)
	mustT(t, err)
	got, err := f.ReadAt(id, 0, int(ii.Size))
	mustT(t, err)
	if !bytes.Equal(got, want.data) {
		t.Errorf("our replay: %s has %d bytes %.40q, want %d bytes %.40q", name, len(got), got, len(want.data), want.data)
	}
	for k, v := range want.xattr {
		x, err := f.GetXattr(id, k)
		if err != nil || string(x) != v {
			t.Errorf("our replay: %s xattr %s = %q, %v; want %q", name, k, x, err, v)
		}
	}
}

// checkKernel mounts img (the kernel replays its log) and compares name.
func checkKernel(t *testing.T, img, name string, want fileState) {
	t.Helper()
	dir := testutil.LoopMount(t, img, "")
	got, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Errorf("kernel replay: %v", err)
	} else if !bytes.Equal(got, want.data) {
		t.Errorf("kernel replay: %s has %d bytes %.40q, want %d bytes %.40q", name, len(got), got, len(want.data), want.data)
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
