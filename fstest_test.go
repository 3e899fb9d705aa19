package gobtrfs_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// runTestFS runs testing/fstest over fsys and logs how long it took.
func runTestFS(t *testing.T, fsys fs.FS, want ...string) {
	t.Helper()
	start := time.Now()
	if err := fstest.TestFS(fsys, want...); err != nil {
		t.Fatal(err)
	}
	t.Logf("fstest.TestFS: %v", time.Since(start))
}

// TestFSTestFSKernel: testing/fstest passes on an image the Linux kernel
// wrote: compressed (zstd, lzo, inline) and plain extents, a reflinked
// and a preallocated file, a subvolume and a read-only snapshot of it,
// symlinks, hard links, a fifo, xattrs. Needs root, loop devices and
// btrfs-progs (skips otherwise).
func TestFSTestFSKernel(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := filepath.Join(t.TempDir(), "img")
	testutil.Mkfs(t, img, 256<<20)
	mnt := testutil.LoopMount(t, img, "compress=zstd")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	put := func(rel string, data []byte) {
		t.Helper()
		p := filepath.Join(mnt, rel)
		must(os.MkdirAll(filepath.Dir(p), 0o755))
		must(os.WriteFile(p, data, 0o644))
	}
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	text := bytes.Repeat([]byte("the kernel wrote this line\n"), 12000) // ~320 KiB, compressible
	put("zstd/text", text)
	put("zstd/inline", []byte("small and inline\n"))
	put("dir/a/b/file", []byte("nested\n"))
	must(os.Symlink("a/b/file", filepath.Join(mnt, "dir/link")))
	must(os.Link(filepath.Join(mnt, "zstd/inline"), filepath.Join(mnt, "dir/hard")))
	must(syscall.Mkfifo(filepath.Join(mnt, "dir/fifo"), 0o600))
	must(syscall.Setxattr(filepath.Join(mnt, "dir/a/b/file"), "user.note", []byte("v"), 0))
	run("btrfs", "-q", "subvolume", "create", filepath.Join(mnt, "sub"))
	put("sub/plain", bytes.Repeat([]byte{0xa5}, 70000))
	must(os.MkdirAll(filepath.Join(mnt, "lzo"), 0o755))
	run("btrfs", "property", "set", filepath.Join(mnt, "lzo"), "compression", "lzo")
	put("lzo/text", text[:100000])
	run("cp", "--reflink=always", filepath.Join(mnt, "zstd/text"), filepath.Join(mnt, "sub/reflink"))
	run("fallocate", "-l", "1M", filepath.Join(mnt, "sub/prealloc"))
	run("btrfs", "-q", "subvolume", "snapshot", "-r", filepath.Join(mnt, "sub"), filepath.Join(mnt, "snap"))
	for i := range 40 {
		put(filepath.Join("many", strings.Repeat("n", i+1)), []byte{byte(i)})
	}
	testutil.Unmount(t, mnt)

	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{SubvolID: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	runTestFS(t, fsys, "zstd/text", "zstd/inline", "dir/a/b/file", "dir/link", "dir/hard", "dir/fifo",
		"sub/plain", "sub/reflink", "sub/prealloc", "snap/reflink", "lzo/text", "many/n")
}

// TestFSTestFSMkfsRootdir: testing/fstest passes on an image our Mkfs
// made from a host tree (Rootdir, zstd): files of many sizes, a sparse
// file, names, modes.
func TestFSTestFSMkfsRootdir(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	testimg.BuildSource(t, src, testimg.SourceOptions{Seed: seed(t), ManyFiles: 100})
	img := filepath.Join(t.TempDir(), "img")
	if err := gobtrfs.Mkfs(img, gobtrfs.MkfsOptions{Size: 256 << 20, Rootdir: src, Compress: "zstd"}); err != nil {
		t.Fatal(err)
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	// the source has dangling symlinks on purpose and fstest opens every
	// entry: test the subtrees without them
	for _, dir := range []string{"files", "names", "modes"} {
		sub, err := fs.Sub(fsys, dir)
		if err != nil {
			t.Fatal(err)
		}
		ents, err := os.ReadDir(filepath.Join(src, dir))
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, e := range ents {
			want = append(want, e.Name())
		}
		t.Run(dir, func(t *testing.T) { runTestFS(t, sub, want...) })
	}
}
