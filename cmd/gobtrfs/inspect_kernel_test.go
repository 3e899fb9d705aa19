package main

import (
	"bytes"
	"fmt"
	mrand "math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// kernelEnv skips unless the test can make loop devices and mount btrfs.
func kernelEnv(t *testing.T) {
	t.Helper()
	needProgs(t)
	testutil.NeedRootLoop(t)
}

// try runs a command and only logs a failure (for optional steps).
func try(t *testing.T, name string, args ...string) bool {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Logf("optional step %s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
		return false
	}
	return true
}

// enableVerity issues FS_IOC_ENABLE_VERITY (sha256, 4K blocks); it fails
// harmlessly on kernels without fs-verity.
func enableVerity(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var arg struct {
		Version, HashAlgorithm, BlockSize, SaltSize uint32
		SaltPtr                                     uint64
		SigSize, Reserved1                          uint32
		SigPtr                                      uint64
		Reserved2                                   [11]uint64
	}
	arg.Version, arg.HashAlgorithm, arg.BlockSize = 1, 1, 4096
	const fsIocEnableVerity = 0x40806685
	_, _, e := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocEnableVerity, uintptr(unsafe.Pointer(&arg)))
	if e != 0 {
		return e
	}
	return nil
}

// kernelWorkload builds, through the kernel, most of what btrfs stores:
// subvolumes, snapshots (one read-only, sent and received), reflinks,
// compressed, inline, preallocated and nodatacow extents, xattrs, many hard
// links (extended refs), fragmented free space (bitmaps), qgroups, device
// stats and a deleted subvolume.
func kernelWorkload(t *testing.T, mnt, scratch string) {
	t.Helper()
	rng := mrand.New(mrand.NewSource(1))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		rng.Read(b)
		return b
	}
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, "btrfs", "quota", "enable", mnt)
	sv := filepath.Join(mnt, "sv")
	testutil.Run(t, "btrfs", "subvolume", "create", sv)
	testutil.Run(t, "btrfs", "qgroup", "limit", "100M", sv)
	testutil.Run(t, "btrfs", "qgroup", "create", "1/100", mnt)
	try(t, "btrfs", "qgroup", "assign", "0/256", "1/100", mnt)

	write(filepath.Join(sv, "text"), bytes.Repeat([]byte("compressible text line\n"), 50000))
	write(filepath.Join(sv, "small"), []byte("hello\n"))
	write(filepath.Join(sv, "inline-compressed"), bytes.Repeat([]byte("a"), 3000))
	write(filepath.Join(sv, "random"), randBytes(300<<10))
	f, err := os.Create(filepath.Join(sv, "prealloc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Fallocate(int(f.Fd()), 0, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	f.WriteAt(randBytes(4096), 64<<10)
	f.Close()
	nocow := filepath.Join(sv, "nocow")
	write(nocow, nil)
	testutil.Run(t, "chattr", "+C", nocow)
	write(nocow, randBytes(64<<10))
	for _, p := range []string{filepath.Join(sv, "small"), sv} {
		unix.Setxattr(p, "user.k", []byte("value"), 0)
		unix.Setxattr(p, "user.big", bytes.Repeat([]byte("v"), 500), 0)
	}
	os.Symlink("small", filepath.Join(sv, "link"))
	unix.Mkfifo(filepath.Join(sv, "fifo"), 0o600)
	sp, _ := os.Create(filepath.Join(sv, "sparse"))
	sp.WriteAt(randBytes(4096), 1<<20)
	sp.Truncate(4 << 20)
	sp.Close()
	links := filepath.Join(sv, "links")
	os.Mkdir(links, 0o755)
	write(filepath.Join(sv, "target"), randBytes(8192))
	for i := 0; i < 120; i++ {
		name := fmt.Sprintf("%03d-%s", i, strings.Repeat("l", 200))
		if err := os.Link(filepath.Join(sv, "target"), filepath.Join(links, name)); err != nil {
			t.Fatal(err)
		}
	}
	refl := filepath.Join(sv, "reflinks")
	os.Mkdir(refl, 0o755)
	for i := 0; i < 150; i++ {
		testutil.Run(t, "cp", "--reflink=always", filepath.Join(sv, "target"), filepath.Join(refl, fmt.Sprint(i)))
	}
	if err := enableVerity(filepath.Join(sv, "small")); err != nil {
		t.Logf("optional step fs-verity: %v", err)
	}
	testutil.Run(t, "sync")

	snap := filepath.Join(mnt, "snap")
	testutil.Run(t, "btrfs", "subvolume", "snapshot", sv, snap)
	write(filepath.Join(snap, "small"), []byte("changed in the snapshot\n"))
	fa, _ := os.OpenFile(filepath.Join(sv, "random"), os.O_WRONLY, 0)
	fa.WriteAt(randBytes(4096), 8192)
	fa.Close()
	for i := 0; i < 40; i++ {
		write(filepath.Join(snap, fmt.Sprintf("snapfile%d", i)), randBytes(5000))
	}
	ro := filepath.Join(mnt, "snap-ro")
	testutil.Run(t, "btrfs", "subvolume", "snapshot", "-r", sv, ro)
	stream := filepath.Join(scratch, "stream")
	testutil.Run(t, "btrfs", "send", "-q", "-f", stream, ro)
	recv := filepath.Join(mnt, "recv")
	os.Mkdir(recv, 0o755)
	testutil.Run(t, "btrfs", "receive", "-q", "-f", stream, recv)

	frag := filepath.Join(mnt, "frag")
	os.Mkdir(frag, 0o755)
	for i := 0; i < 3000; i++ {
		write(filepath.Join(frag, fmt.Sprint(i)), randBytes(4096))
	}
	testutil.Run(t, "sync")
	for i := 0; i < 3000; i += 2 {
		os.Remove(filepath.Join(frag, fmt.Sprint(i)))
	}
	try(t, "btrfs", "device", "stats", "-z", mnt)
	gone := filepath.Join(mnt, "gone")
	testutil.Run(t, "btrfs", "subvolume", "create", gone)
	for i := 0; i < 50; i++ {
		write(filepath.Join(gone, fmt.Sprint(i)), randBytes(3000))
	}
	testutil.Run(t, "sync")
	testutil.Run(t, "btrfs", "subvolume", "delete", gone)
}

// manySnapshots snapshots a subvolume with a tree of three levels n times
// and writes into every snapshot and into the original, so tree blocks are
// shared widely: full backrefs (the owner COWing a shared node), shared
// block and data refs below them, and keyed refs once inline ones overflow. (Kept out
// of the quota image: with qgroups spread over several leaves btrfs check
// 6.2 fails to load qgroup relations, a btrfs-progs bug.)
func manySnapshots(t *testing.T, mnt string, n int) {
	t.Helper()
	sv := filepath.Join(mnt, "base")
	testutil.Run(t, "btrfs", "subvolume", "create", sv)
	for i := 0; i < 2500; i++ {
		var data []byte
		if i%10 == 0 {
			data = bytes.Repeat([]byte{byte(i)}, 5000)
		}
		if err := os.WriteFile(filepath.Join(sv, fmt.Sprint(i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, "sync")
	for i := 0; i < n; i++ {
		s := filepath.Join(mnt, fmt.Sprintf("many%02d", i))
		testutil.Run(t, "btrfs", "subvolume", "snapshot", sv, s)
		os.WriteFile(filepath.Join(s, fmt.Sprint(i*50)), []byte("changed"), 0o644)
	}
	for i := 0; i < 2500; i += 100 {
		os.WriteFile(filepath.Join(sv, fmt.Sprint(i)), []byte("changed in the original"), 0o644)
	}
	testutil.Run(t, "sync")
}

// TestKernelSharedRefsDumpMatchesBtrfsProgs compares an image whose tree
// blocks are shared by many snapshots.
func TestKernelSharedRefsDumpMatchesBtrfsProgs(t *testing.T) {
	kernelEnv(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	testutil.Mkfs(t, img, 1<<30, "-n", "4096")
	mnt := testutil.LoopMount(t, img, "commit=600")
	manySnapshots(t, mnt, 40)
	// A paused balance keeps its item on disk (when the balance is not
	// already done by the time the pause arrives).
	try(t, "btrfs", "balance", "start", "--bg", "--full-balance", mnt)
	testutil.Unmount(t, mnt)
	checktest.Image(t, img)
	decodeAllItems(t, img)
	seen := map[string]int{}
	for _, args := range [][]string{{"dump-tree"}, {"dump-tree", "-t", "extent"}} {
		seenItemTypes(compareDump(t, img, args...), seen)
	}
	t.Logf("item types compared equal: %s", seenList(seen))
	requireSeen(t, seen, "inline:SHARED_BLOCK_REF", "extent:FULL_BACKREF")
}

// TestKernelImageDumpMatchesBtrfsProgs compares dump-tree and dump-super on
// an image written by the Linux kernel.
func TestKernelImageDumpMatchesBtrfsProgs(t *testing.T) {
	kernelEnv(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	testutil.Mkfs(t, img, 1<<30, "-n", "4096")
	mnt := testutil.LoopMount(t, img, "compress=zstd,commit=600")
	kernelWorkload(t, mnt, dir)

	// A crash image with a log tree: fsync new and changed files, then copy
	// the device before any commit.
	logDir := filepath.Join(mnt, "sv", "logged")
	os.Mkdir(logDir, 0o755)
	testutil.Run(t, "sync")
	for i := 0; i < 5; i++ {
		lf, err := os.Create(filepath.Join(logDir, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		lf.Write(bytes.Repeat([]byte{byte(i)}, 5000))
		lf.Sync()
		lf.Close()
	}
	if d, err := os.Open(logDir); err == nil {
		d.Sync()
		d.Close()
	}
	logImg := filepath.Join(dir, "img-log")
	testutil.Run(t, "cp", "--sparse=always", img, logImg)
	testutil.Unmount(t, mnt)

	checktest.Image(t, img)
	decodeAllItems(t, img)
	seen := map[string]int{}
	for _, args := range [][]string{
		{"dump-super", "-f"}, {"dump-tree"}, {"dump-tree", "--dfs"}, {"dump-tree", "--csum-items"},
		{"dump-tree", "-t", "fs"}, {"dump-tree", "-t", "256"}, {"dump-tree", "-t", "quota"},
		{"dump-tree", "-e"}, {"dump-tree", "-R"}, {"dump-tree", "--hide-names"}, {"dump-tree", "-u"},
		{"dump-tree", "-d"}, {"dump-tree", "-t", "uuid"},
	} {
		seenItemTypes(compareDump(t, img, args...), seen)
	}
	if out, err := exec.Command("btrfs", "inspect-internal", "dump-super", logImg).Output(); err == nil &&
		!bytes.Contains(out, []byte("log_root\t\t0\n")) {
		for _, args := range [][]string{{"dump-super", "-f"}, {"dump-tree"}, {"dump-tree", "-t", "TREE_LOG"}} {
			seenItemTypes(compareDump(t, logImg, args...), seen)
		}
	} else {
		t.Logf("the copied image has no log tree; log items not compared")
	}
	t.Logf("item types compared equal: %s", seenList(seen))
	requireSeen(t, seen, "node", "ROOT_REF", "ROOT_BACKREF", "INODE_EXTREF", "EXTENT_DATA_REF",
		"UUID_KEY_RECEIVED_SUBVOL", "FREE_SPACE_BITMAP", "QGROUP_RELATION", "QGROUP_INFO", "QGROUP_LIMIT")
}

// TestKernelImageOldFormatsMatchBtrfsProgs covers what the main kernel test
// cannot: a v1 space cache, non-skinny extent items and explicit holes
// written by the kernel, zlib and lzo extents and a device replace.
func TestKernelImageOldFormatsMatchBtrfsProgs(t *testing.T) {
	kernelEnv(t)
	dir := t.TempDir()
	img, img2 := filepath.Join(dir, "img"), filepath.Join(dir, "img2")
	testutil.SparseFile(t, img2, 1<<30)
	testutil.Mkfs(t, img, 1<<30, "-n", "4096", "-O", "^skinny-metadata,^no-holes", "-R", "^free-space-tree")
	mnt := testutil.LoopMount(t, img, "space_cache=v1,compress=lzo,commit=600")
	rng := mrand.New(mrand.NewSource(2))
	text := bytes.Repeat([]byte("some compressible text\n"), 20000)
	for i := 0; i < 20; i++ {
		b := make([]byte, 4096+rng.Intn(200000))
		rng.Read(b)
		if err := os.WriteFile(filepath.Join(mnt, fmt.Sprint("f", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(mnt, "lzo"), text, 0o644)
	z := filepath.Join(mnt, "zlib")
	os.WriteFile(z, nil, 0o644)
	try(t, "btrfs", "property", "set", z, "compression", "zlib")
	os.WriteFile(z, text, 0o644)
	sp, _ := os.Create(filepath.Join(mnt, "holes"))
	sp.WriteAt([]byte("data after a hole"), 1<<20)
	sp.Close()
	testutil.Run(t, "sync")
	// Replace the device: the filesystem moves to img2 and keeps a
	// DEV_REPLACE item.
	loop2 := testutil.Loop(t, img2)
	replaced := try(t, "btrfs", "replace", "start", "-B", "-f", "1", loop2, mnt)
	manySnapshots(t, mnt, 30)
	testutil.Unmount(t, mnt)
	target := img
	if replaced {
		target = img2
	}
	checktest.Image(t, target)
	decodeAllItems(t, target)
	seen := map[string]int{}
	for _, args := range [][]string{{"dump-super", "-f"}, {"dump-tree"}, {"dump-tree", "--dfs"}, {"dump-tree", "-d"}} {
		seenItemTypes(compareDump(t, target, args...), seen)
	}
	t.Logf("item types compared equal: %s", seenList(seen))
	requireSeen(t, seen, "extent:tree_block_info", "file_extent:hole", "compression:lzo")
}
