package gobtrfs_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"github.com/gobtrfs/gobtrfs/internal/treelog"
	"golang.org/x/sys/unix"
)

// logCase is a kernel crash image with a pending log tree: prep is run and
// committed, then change is run (it ends with an fsync) and the image is
// copied while still mounted, as a power cut would leave it.
type logCase struct {
	name   string
	mount  string // extra mount options
	prep   string
	change string
}

var logCases = []logCase{
	{name: "append",
		prep:   "head -c 100000 /dev/urandom > a",
		change: "head -c 50000 /dev/urandom >> a && xfs_io -c fsync a"},
	{name: "overwrite",
		prep:   "head -c 1048576 /dev/urandom > a",
		change: "xfs_io -c 'pwrite -S 0xab 100k 200k' -c fsync a"},
	{name: "unlink",
		prep:   "mkdir d && echo x > d/a && echo y > d/b && echo z > d/c",
		change: "rm d/a && xfs_io -r -c fsync d"},
	{name: "hardlink",
		prep:   "echo data > a && mkdir d",
		change: "ln a d/b && ln a c && xfs_io -c fsync a"},
	{name: "xattr-truncate",
		prep:   "head -c 300000 /dev/urandom > a && setfattr -n user.old -v 1 a && setfattr -n user.keep -v 2 a",
		change: "setfattr -n user.new -v hello a && setfattr -x user.old a && truncate -s 5000 a && xfs_io -c fsync a"},
	{name: "prealloc",
		prep:   "echo base > x",
		change: "xfs_io -f -c 'falloc 0 1M' -c 'pwrite 64k 128k' -c fsync p"},
	{name: "newtree",
		prep:   "echo base > x",
		change: "mkdir -p a/b/c && echo 1 > a/b/c/f && echo 2 > a/g && xfs_io -c fsync a/b/c/f && xfs_io -r -c fsync a/b/c && xfs_io -r -c fsync a/b && xfs_io -r -c fsync a"},
	{name: "300files",
		prep:   "mkdir d && echo old > d/old",
		change: "for i in $(seq 300); do echo $i > d/f$i; done && xfs_io -r -c fsync d"},
	{name: "rename",
		prep:   "mkdir d1 d2 && echo hello > d1/a && echo other > d2/b",
		change: "echo more >> d1/a && xfs_io -c fsync d1/a && mv d1/a d2/c && xfs_io -c fsync d2/c"},
	{name: "subvolumes",
		prep:   "btrfs -q subvolume create sv && echo a > sv/f && echo top > t && btrfs -q subvolume snapshot sv snap",
		change: "echo more >> snap/f && xfs_io -c fsync snap/f && echo new > sv/n && xfs_io -c fsync sv/n && echo more >> t && xfs_io -c fsync t"},
	{name: "unlink-sibling",
		prep:   "mkdir d && echo x > d/a && echo y > d/b",
		change: "rm d/a && echo z > d/c && xfs_io -c fsync d/c"},
	{name: "holes",
		prep:   "head -c 65536 /dev/urandom > a",
		change: "xfs_io -c 'pwrite 1M 4k' -c 'pwrite 200k 8k' -c fsync a"},
	{name: "rmdir",
		prep:   "mkdir -p d/sub && echo x > d/f && echo y > d/g",
		change: "rmdir d/sub && rm d/f && echo n > d/n && xfs_io -r -c fsync d"},
	{name: "symlink",
		prep:   "mkdir d",
		change: "ln -s ../some/target d/l && mknod d/fifo p && xfs_io -r -c fsync d"},
	{name: "big",
		prep:   "echo small > a",
		change: "head -c 100000 /dev/urandom >> a && head -c 9000000 /dev/urandom > b && xfs_io -c fsync a && xfs_io -c fsync b"},
	{name: "refsync",
		prep:   "head -c 200000 /dev/urandom > a",
		change: "xfs_io -c 'pwrite -S 1 0 4k' -c fsync -c 'pwrite -S 2 8k 4k' -c 'truncate 150000' -c fsync a"},
	{name: "unlinked-after-fsync",
		prep:   "echo keep > k",
		change: "echo x > a && xfs_io -c fsync a && ln a b && rm a && xfs_io -c fsync b"},
	{name: "quota",
		prep:   "btrfs quota enable . && btrfs -q subvolume create sv && head -c 100000 /dev/urandom > sv/a",
		change: "head -c 300000 /dev/urandom >> sv/a && head -c 50000 /dev/urandom > sv/b && xfs_io -c fsync sv/a && xfs_io -c fsync sv/b"},
	{name: "nodatasum", mount: "nodatasum",
		prep:   "head -c 100000 /dev/urandom > a",
		change: "xfs_io -c 'pwrite -S 7 4k 64k' -c fsync a"},
	{name: "compressed", mount: "compress=zstd",
		prep:   "echo base > x",
		change: "yes hello | head -c 500000 > c && head -c 200000 /dev/urandom >> c && echo small > s && xfs_io -c fsync c && xfs_io -c fsync s"},
}

// TestKernelLogReplay builds each case's crash image with the kernel and
// checks that (a) our read-only open shows what the kernel shows after its
// own replay, without writing the image, (b) our read-write open replays
// and commits an image that btrfs check passes and the kernel mounts with
// the same content, and (c) nologreplay shows the committed state with a
// warning.
func TestKernelLogReplay(t *testing.T) {
	testutil.NeedRootLoop(t)
	testutil.NeedProgs(t)
	if _, err := exec.LookPath("xfs_io"); err != nil {
		t.Skip("xfs_io not installed (xfsprogs)")
	}
	for _, c := range logCases {
		t.Run(c.name, func(t *testing.T) { runLogCase(t, c) })
	}
}

// crashImage runs case c on a new kernel-mounted image and returns the
// copy taken after the fsync, while still mounted.
func crashImage(t *testing.T, c logCase) string {
	// The kernel sometimes commits instead of logging (a rename right after
	// a logged fsync, a transaction kicked by memory pressure): try again,
	// and skip with a message if it keeps committing.
	for attempt := 1; ; attempt++ {
		dir := t.TempDir()
		img := filepath.Join(dir, "img")
		crash := filepath.Join(dir, "crash")
		testutil.Mkfs(t, img, 256<<20)
		opts := "commit=300"
		if c.mount != "" {
			opts += "," + c.mount
		}
		mnt := testutil.LoopMount(t, img, opts)
		sh(t, mnt, c.prep)
		testutil.Run(t, "btrfs", "filesystem", "sync", mnt)
		sh(t, mnt, c.change)
		testutil.Run(t, "cp", "--sparse=always", img, crash)
		testutil.Unmount(t, mnt)
		if logRoot(t, crash) != "0" {
			return crash
		}
		if attempt == 3 || strings.HasPrefix(t.Name(), "TestKernelLogReplayRandom/") {
			t.Skipf("the kernel committed instead of logging (log_root 0) in %d attempt(s)", attempt)
		}
		t.Logf("attempt %d: the kernel committed instead of logging; again", attempt)
	}
}

func runLogCase(t *testing.T, c logCase) {
	compareReplay(t, crashImage(t, c))
}

// compareReplay checks our replays of crash against the kernel's.
func compareReplay(t *testing.T, crash string) {
	checktest.Image(t, crash) // btrfs-progs accepts the pending log as it is
	// The kernel's replay is the expected view.
	oracle := copyImage(t, crash, "oracle")
	want := kernelView(t, oracle, "")
	before := copyImage(t, crash, "before") // to compare with nologreplay

	changed := testutil.DiffMaps(want, kernelView(t, copyImage(t, crash, "committed"), "rescue=nologreplay,ro"))
	if len(changed) == 0 {
		if strings.HasPrefix(t.Name(), "TestKernelLogReplayRandom/") {
			// A later commit took the changes; the last fsync logged nothing new.
			t.Skip("the kernel's replay changes nothing")
		}
		t.Fatalf("the kernel's replay changes nothing: the case tests no log")
	}
	t.Logf("%d paths; the log changes %d of them", len(want), len(changed))

	// (a) our read-only view replays in memory and leaves the image alone.
	got, warns := ourView(t, crash, false)
	if d := testutil.DiffMaps(want, got); len(d) > 0 {
		t.Errorf("read view differs from the kernel's replay:\n%s", strings.Join(d, "\n"))
	}
	if len(warns) > 0 {
		t.Errorf("read view warned: %q", warns)
	}
	if logRoot(t, crash) == "0" {
		t.Errorf("read-only open wrote the image (log_root cleared)")
	}

	// (c) nologreplay: the committed state, with a warning.
	old, warns := ourView(t, crash, true)
	if !strings.Contains(strings.Join(warns, "\n"), "not replayed") {
		t.Errorf("nologreplay: no warning (got %q)", warns)
	}
	if d := testutil.DiffMaps(kernelView(t, before, "rescue=nologreplay,ro"), old); len(d) > 0 {
		t.Errorf("nologreplay view differs from the kernel's nologreplay view:\n%s", strings.Join(d, "\n"))
	}

	// (b) read-write open: replay, commit, btrfs check, kernel mount.
	rwImg := copyImage(t, crash, "rw")
	rw, err := gobtrfs.OpenRW(rwImg, nil)
	if err != nil {
		t.Fatalf("OpenRW of the crash image: %v", err)
	}
	if err := rw.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if lr := logRoot(t, rwImg); lr != "0" {
		t.Errorf("after OpenRW the log root is still %s", lr)
	}
	checktest.Image(t, rwImg)
	if n := ourCheckErrors(t, rwImg); n != 0 {
		t.Errorf("our checker finds %d errors after our replay", n)
	}
	if d := testutil.DiffMaps(want, kernelView(t, rwImg, "")); len(d) > 0 {
		t.Errorf("kernel view after our replay differs from the kernel's replay:\n%s", strings.Join(d, "\n"))
	}
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh -c %q: %v\n%s", script, err, out)
	}
}

func copyImage(t *testing.T, src, name string) string {
	t.Helper()
	dst := filepath.Join(filepath.Dir(src), name)
	testutil.Run(t, "cp", "--sparse=always", src, dst)
	return dst
}

// logRoot is the superblock's log_root as btrfs-progs prints it.
func logRoot(t *testing.T, img string) string {
	t.Helper()
	out := testutil.Run(t, "btrfs", "inspect-internal", "dump-super", img)
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "log_root" {
			return f[1]
		}
	}
	t.Fatalf("dump-super %s: no log_root line", img)
	return ""
}

// kernelView mounts img with the kernel (which replays a log unless
// nologreplay) and describes every path.
func kernelView(t *testing.T, img, opts string) map[string]string {
	t.Helper()
	mnt := testutil.LoopMount(t, img, opts)
	defer testutil.Unmount(t, mnt)
	return dirView(t, mnt)
}

// dirView describes every path under the mounted directory mnt.
func dirView(t *testing.T, mnt string) map[string]string {
	t.Helper()
	view := map[string]string{}
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		var content []byte
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			if content, err = os.ReadFile(p); err != nil {
				return err
			}
		case syscall.S_IFLNK:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			content = []byte(l)
		}
		var xs []string
		if names, err := listXattrs(p); err == nil {
			for _, n := range names {
				v := make([]byte, 65536)
				k, err := unix.Lgetxattr(p, n, v)
				if err != nil {
					return err
				}
				xs = append(xs, n+"="+string(v[:k]))
			}
		}
		view[rel] = describe(st.Mode, st.Size, uint32(st.Nlink), content, xs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return view
}

func listXattrs(p string) ([]string, error) {
	buf := make([]byte, 65536)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range strings.Split(string(buf[:n]), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// ourView opens img read-only with our library and describes every path.
func ourView(t *testing.T, img string, noReplay bool) (map[string]string, []string) {
	t.Helper()
	var warns []string
	f, err := gobtrfs.Open(img, &gobtrfs.Options{NoLogReplay: noReplay, Warn: func(s string) { warns = append(warns, s) }})
	if err != nil {
		t.Fatalf("open %s: %v", img, err)
	}
	defer f.Close()
	view := map[string]string{}
	err = fs.WalkDir(f, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := f.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*gobtrfs.Stat)
		var content []byte
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			if content, err = f.ReadFile(p); err != nil {
				return err
			}
		case syscall.S_IFLNK:
			l, err := f.ReadLink(p)
			if err != nil {
				return err
			}
			content = []byte(l)
		}
		xa, err := f.Xattrs(p)
		if err != nil {
			return err
		}
		var xs []string
		for _, x := range xa {
			xs = append(xs, x.Name+"="+string(x.Value))
		}
		view[p] = describe(st.Mode, st.Size, st.Nlink, content, xs)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", img, err)
	}
	return view, warns
}

func describe(mode uint32, size int64, nlink uint32, content []byte, xattrs []string) string {
	sort.Strings(xattrs)
	return fmt.Sprintf("mode=%o size=%d nlink=%d sha=%x xattrs=%q", mode, size, nlink,
		sha256.Sum256(content), xattrs)
}

// TestKernelLogReplayCorrupt damages the log root block of a kernel crash
// image: the read-only open warns and shows the committed state; the
// read-write open refuses with an error naming the log tree, and the image
// is left as it was.
func TestKernelLogReplayCorrupt(t *testing.T) {
	testutil.NeedRootLoop(t)
	testutil.NeedProgs(t)
	if _, err := exec.LookPath("xfs_io"); err != nil {
		t.Skip("xfs_io not installed (xfsprogs)")
	}
	crash := crashImage(t, logCases[0])
	committed := kernelView(t, copyImage(t, crash, "committed"), "rescue=nologreplay,ro")
	info := testimg.OpenFS(t, crash)
	addr := info.Super.LogRoot
	copies, _, err := info.Chunks.Map(addr, uint64(info.Super.NodeSize))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		patch(t, crash, int64(c.Physical), flip, int(info.Super.NodeSize))
	}

	got, warns := ourView(t, crash, false)
	if w := strings.Join(warns, "\n"); !strings.Contains(w, "cannot replay the log tree") || !strings.Contains(w, fmt.Sprint(uint64(addr))) {
		t.Errorf("read view of a corrupt log: warnings %q, want one naming the log root block %d", warns, uint64(addr))
	}
	if d := testutil.DiffMaps(committed, got); len(d) > 0 {
		t.Errorf("read view of a corrupt log is not the committed state:\n%s", strings.Join(d, "\n"))
	}
	rw, err := gobtrfs.OpenRW(crash, nil)
	if err == nil {
		rw.Close()
		t.Fatal("OpenRW replayed a corrupt log tree")
	}
	if !strings.Contains(err.Error(), "log root tree") || !errors.Is(err, diskio.ErrCorrupt) {
		t.Errorf("OpenRW error %q: want a corruption error naming the log root tree", err)
	}
	if logRoot(t, crash) == "0" {
		t.Errorf("the failed replay cleared the log root")
	}
}

// TestLogRootNotALogTree points the superblock's log root at the root
// tree: a hostile image must not crash either open, and must not be
// replayed into.
func TestLogRootNotALogTree(t *testing.T) {
	testutil.NeedProgs(t)
	img := filepath.Join(t.TempDir(), "img")
	testutil.Mkfs(t, img, 128<<20)
	dev, err := blockdev.OpenFile(img, false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := diskio.ReadSuper(dev, 0)
	if err != nil {
		t.Fatal(err)
	}
	sb := res.Super
	sb.LogRoot, sb.LogRootLevel = sb.Root, sb.RootLevel
	sb.Bytenr = ondisk.SuperMirrorOffsets[0]
	b := sb.Encode()
	csum.Type(sb.CsumType).SetBlock(b)
	if _, err := dev.WriteAt(b, int64(sb.Bytenr)); err != nil {
		t.Fatal(err)
	}
	dev.Close()

	var warns []string
	f, err := gobtrfs.Open(img, &gobtrfs.Options{Warn: func(s string) { warns = append(warns, s) }})
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	if errs := walkAll(f); len(errs) > 0 {
		t.Errorf("walk: %v", errs)
	}
	f.Close()
	t.Logf("warnings: %q", warns)
	if w := strings.Join(warns, "\n"); !strings.Contains(w, "cannot replay the log tree") {
		t.Errorf("read-only open: no warning that the log was not replayed (got %q)", warns)
	}
	rw, err := gobtrfs.OpenRW(img, nil)
	if err == nil {
		rw.Close()
		t.Fatal("OpenRW replayed a log root that is the root tree")
	}
	if !errors.Is(err, diskio.ErrCorrupt) || !strings.Contains(err.Error(), "log tree") {
		t.Errorf("OpenRW: %v: want a corruption error naming the log tree", err)
	}
	testutil.CheckImage(t, img, "--super", "1") // the image itself was not written (btrfs check of the mirror: the primary points at a bogus log root)
}

// TestKernelLogReplayRandom runs random operations with random fsyncs on a
// kernel mount, cuts the power after the last fsync and compares our
// replays with the kernel's. Replay a failure with -seed.
func TestKernelLogReplayRandom(t *testing.T) {
	testutil.NeedRootLoop(t)
	testutil.NeedProgs(t)
	if _, err := exec.LookPath("xfs_io"); err != nil {
		t.Skip("xfs_io not installed (xfsprogs)")
	}
	seed := testutil.Seed(t, *seedFlag)
	rng := rand.New(rand.NewSource(seed))
	runs := 4
	if testing.Short() {
		runs = 1
	}
	for i := 0; i < runs; i++ {
		prep, change := randomLogScript(rng)
		c := logCase{name: fmt.Sprint(i), prep: prep, change: change}
		if rng.Intn(3) == 0 {
			c.mount = "compress=zstd"
		}
		t.Run(c.name, func(t *testing.T) {
			t.Logf("prep:\n%s\nchange:\n%s", prep, change)
			compareReplay(t, crashImage(t, c))
		})
	}
}

// randomLogScript makes a committed starting tree and a sequence of
// changes with fsyncs that ends with an fsync.
func randomLogScript(rng *rand.Rand) (prep, change string) {
	var p, c []string
	files := []string{"d0/f0", "d0/f1", "d1/f2", "f3"}
	dirs := []string{".", "d0", "d1", "d0/s"}
	p = append(p, "mkdir -p d0/s d1")
	for _, f := range files {
		p = append(p, fmt.Sprintf("head -c %d /dev/urandom > %s", rng.Intn(300000), f))
	}
	p = append(p, "setfattr -n user.a -v 1 d0/f0")
	n := 0
	pick := func(l []string) string { return l[rng.Intn(len(l))] }
	newName := func() string { n++; return fmt.Sprintf("%s/n%d", pick(dirs), n) }
	for i := 0; i < 4+rng.Intn(24); i++ {
		f := pick(files)
		switch rng.Intn(12) {
		case 0:
			nf := newName()
			c = append(c, fmt.Sprintf("head -c %d /dev/urandom > %s", rng.Intn(200000), nf))
			files = append(files, nf)
		case 1:
			c = append(c, fmt.Sprintf("head -c %d /dev/urandom >> %s", rng.Intn(100000), f))
		case 2:
			c = append(c, fmt.Sprintf("xfs_io -c 'pwrite -S %d %d %d' %s", rng.Intn(256), rng.Intn(400000), 1+rng.Intn(100000), f))
		case 3:
			c = append(c, fmt.Sprintf("truncate -s %d %s", rng.Intn(300000), f))
		case 4:
			nf := newName()
			c = append(c, fmt.Sprintf("ln %s %s", f, nf))
			files = append(files, nf)
		case 5:
			if len(files) > 2 {
				j := rng.Intn(len(files))
				c = append(c, "rm -f "+files[j])
				files = append(files[:j], files[j+1:]...)
			}
		case 6:
			nf := newName()
			c = append(c, fmt.Sprintf("mv %s %s", f, nf))
			for j := range files {
				if files[j] == f {
					files[j] = nf
				}
			}
		case 7:
			c = append(c, fmt.Sprintf("setfattr -n user.x%d -v v%d %s", rng.Intn(3), rng.Intn(100), f))
		case 8:
			c = append(c, fmt.Sprintf("xfs_io -c 'falloc %d %d' %s", rng.Intn(300000), 1+rng.Intn(200000), f))
		case 9:
			d := fmt.Sprintf("%s/dd%d", pick(dirs), rng.Intn(100))
			c = append(c, "mkdir -p "+d)
			dirs = append(dirs, d)
		case 10:
			c = append(c, "xfs_io -r -c fsync "+pick(dirs))
		case 11:
			if len(files) > 2 {
				j := rng.Intn(len(files))
				c = append(c, "rm -f "+files[j], "xfs_io -r -c fsync "+filepath.Dir(files[j]))
				files = append(files[:j], files[j+1:]...)
			}
		}
		if rng.Intn(3) == 0 {
			c = append(c, "xfs_io -c fsync "+pick(files))
		}
	}
	c = append(c, "xfs_io -c fsync "+pick(files))
	return strings.Join(p, "\n"), strings.Join(c, "\n")
}

// TestKernelLogReplayMutations changes random bytes of a kernel log tree's
// blocks (with valid checksums, so that the content reaches the replay):
// neither open may panic or hang, and a read-only open never writes the
// image. (What btrfs check says of an image replayed from a log whose
// content was changed is logged: a valid-looking but wrong log replays
// wrong items, for Linux too.)
func TestKernelLogReplayMutations(t *testing.T) {
	testutil.NeedRootLoop(t)
	testutil.NeedProgs(t)
	if _, err := exec.LookPath("xfs_io"); err != nil {
		t.Skip("xfs_io not installed (xfsprogs)")
	}
	seed := testutil.Seed(t, *seedFlag)
	rng := rand.New(rand.NewSource(seed))
	crash := crashImage(t, logCases[7]) // 300 files: several log blocks
	info := testimg.OpenFS(t, crash)
	logs, err := treelog.Read(info)
	if err != nil || logs == nil {
		t.Fatalf("read the kernel's log: %v", err)
	}
	ns := int(info.Super.NodeSize)
	ct := csum.Type(info.Super.CsumType)
	runs := 12
	if testing.Short() {
		runs = 3
	}
	for i := 0; i < runs; i++ {
		img := copyImage(t, crash, fmt.Sprintf("m%d", i))
		addr := logs.Blocks[rng.Intn(len(logs.Blocks))]
		copies, _, err := info.Chunks.Map(addr, uint64(ns))
		if err != nil {
			t.Fatal(err)
		}
		var what []string
		flips := map[int]byte{}
		for k := 0; k < 1+rng.Intn(4); k++ {
			o := 101 + rng.Intn(ns-101)
			flips[o] = byte(1 + rng.Intn(255))
			what = append(what, fmt.Sprint(o))
		}
		for _, c := range copies { // every copy alike (DUP metadata)
			patch(t, img, int64(c.Physical), func(b []byte) {
				for o, x := range flips {
					b[o] ^= x
				}
				ct.SetBlock(b)
			}, ns)
		}
		t.Logf("run %d: block %d, bytes %v", i, uint64(addr), what)
		f, err := gobtrfs.Open(img, &gobtrfs.Options{Warn: func(string) {}})
		if err != nil {
			t.Logf("read-only open: %v", err)
		} else {
			walkAll(f)
			f.Close()
		}
		if logRoot(t, img) == "0" {
			t.Fatalf("run %d: the read-only open wrote the image", i)
		}
		rw, err := gobtrfs.OpenRW(img, nil)
		if err != nil {
			t.Logf("OpenRW: %v", err)
			os.Remove(img)
			continue
		}
		if err := rw.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		r, _ := testutil.ProgsCheck(img)
		t.Logf("run %d: replayed; btrfs check: %d problem lines", i, len(r.Problems))
		os.Remove(img)
	}
}
