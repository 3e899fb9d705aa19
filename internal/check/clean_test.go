package check

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// mkfsVariants are the mkfs.btrfs options the clean tests cover.
var mkfsVariants = [][]string{
	{},
	{"--csum", "xxhash"},
	{"--csum", "sha256"},
	{"--csum", "blake2"},
	{"-n", "4096"},
	{"-n", "8192", "-m", "single"},
	{"-n", "65536"},
	{"-m", "single"},
	{"-O", "^no-holes"},
	{"-R", "^free-space-tree"},
	{"-O", "^skinny-metadata"},
	{"-O", "^extref"},
	{"-M"},
}

// TestMkfsImagesClean: every mkfs.btrfs variant, empty and with a source
// tree, is clean for our checker and for btrfs check.
func TestMkfsImagesClean(t *testing.T) {
	needProgs(t)
	src := source(t)
	for _, args := range mkfsVariants {
		name := strings.Join(args, " ")
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			empty := filepath.Join(dir, "empty.img")
			mkfsImage(t, empty, "", 256<<20, args...)
			mustBeClean(t, empty, Options{})
			full := filepath.Join(dir, "full.img")
			mkfsImage(t, full, src, 256<<20, args...)
			rep := mustBeClean(t, full, Options{CheckDataCsum: true})
			if rep.DataBytesVerified == 0 || rep.BytesUsed == 0 {
				t.Errorf("nothing checked? %+v", rep)
			}
		})
	}
}

// TestOwnMkfsClean: images of our own mkfs pass both checkers, through
// Image and through FS on an in-memory device.
func TestOwnMkfsClean(t *testing.T) {
	needProgs(t)
	bgt, err := mkfs.ParseFeatures("block-group-tree", mkfs.Features{})
	if err != nil {
		t.Fatal(err)
	}
	// btrfs-progs 6.2 cannot open the block group tree: ours only
	rep, err := device(newMkfsMemory(t, mkfs.Config{Features: bgt}), Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("block-group-tree image: %v\n%v", err, rep)
	}
	for _, cfg := range []mkfs.Config{
		{},
		{Csum: 2, NodeSize: 4096, MetadataProfile: "single"},
	} {
		img := filepath.Join(t.TempDir(), "own.img")
		newImage(t, img, 256<<20)
		dev, err := blockdev.OpenFile(img, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := mkfs.Make(dev, cfg); err != nil {
			t.Fatal(err)
		}
		dev.Close()
		mustBeClean(t, img, Options{})

		rep, err := device(newMkfsMemory(t, cfg), Options{})
		if err != nil || !rep.OK() {
			t.Fatalf("check of in-memory image: %v\n%v", err, rep)
		}
	}
}

// kernelWorkload runs in the mounted filesystem: files of many sizes,
// compression, subvolumes and snapshots (with nested subvolumes left as
// placeholders), reflinks, preallocation, punched holes, NODATACOW,
// deletes, hard links, xattrs and a big directory.
const kernelWorkload = `
set -e
cd "$1"
rnd() { head -c "$1" /dev/urandom; }
mkdir -p a/b/c
for i in $(seq 1 200); do rnd $((i * 997)) > a/f$i; done
for i in $(seq 1 100); do echo small$i > a/b/s$i; done
head -c 3000000 < <(yes compressible) > a/text || true
btrfs -q subvolume create sv
cp -r a sv/
mkdir sv/many; for i in $(seq 1 1200); do echo $i > sv/many/entry-with-a-longer-name-$i; done
btrfs -q subvolume create sv/nested
echo nested > sv/nested/file
btrfs -q subvolume snapshot sv snap1
btrfs -q subvolume snapshot -r . rosnap
cp --reflink=always a/text a/text.clone
cp --reflink=always a/f100 sv/f100.clone
fallocate -l 4M a/falloc
rnd 12288 | dd of=a/falloc bs=4k seek=10 conv=notrunc status=none
rnd 1000000 > a/punched; sync; fallocate -p -o 100000 -l 300000 a/punched
truncate -s 50M a/sparse
echo x > a/sparse2; truncate -s 1M a/sparse2
ln a/f1 a/b/hard1; ln a/f1 a/b/c/hard2
python3 -c 'import os; os.setxattr("a/f2", "user.test", b"hello")' 2>/dev/null || true
ln -s /etc/passwd a/sym
mkfifo a/fifo
rm -f a/f1[0-5]*
rm -rf snap1/a/b
echo diverged >> snap1/a/f7
btrfs -q subvolume snapshot sv snap2
for i in $(seq 1 1200 7); do echo changed >> sv/many/entry-with-a-longer-name-$i; done
rm -f sv/many/entry-with-a-longer-name-*5
mkdir deep; for i in $(seq 1 1500); do : > deep/file-with-a-long-name-$i; done
touch a/nocow; chattr +C a/nocow; rnd 100000 >> a/nocow
btrfs -q subvolume create gone; echo x > gone/x; btrfs -q subvolume delete gone
# fragment a block group so that the free space tree switches to bitmaps
python3 -c '
import os
os.mkdir("frag")
for i in range(5000):
    with open("frag/f%d" % i, "wb") as f: f.write(os.urandom(4096))
'
sync
python3 -c '
import os
for i in range(0, 5000, 2): os.unlink("frag/f%d" % i)
'
sync
`

// kernelImage makes an image with mkfs.btrfs args, mounts it with mount
// options, runs kernelWorkload (then the shell commands in extra, in the
// mount directory) and unmounts it.
func kernelImage(t *testing.T, img string, mountOpts, extra string, args ...string) {
	t.Helper()
	testutil.NeedRootLoop(t)
	mkfsImage(t, img, "", 1<<30, args...)
	dev := testutil.Loop(t, img)
	mnt := testutil.Mount(t, dev, mountOpts)
	out, err := exec.Command("bash", "-c", kernelWorkload+extra, "workload", mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("workload: %v\n%s", err, out)
	}
	testutil.Unmount(t, mnt)
}

// TestKernelImagesClean: kernel-made images, under several mkfs and mount
// options, are clean for both checkers (data checksums verified too).
func TestKernelImagesClean(t *testing.T) {
	needProgs(t)
	testutil.NeedRootLoop(t)
	for _, v := range []struct {
		name, mount, extra string
		args               []string
	}{
		{"default-zstd", "compress=zstd", "", nil},
		{"no-holes-off-lzo", "compress-force=lzo", "", []string{"-O", "^no-holes"}},
		{"space-cache-v1", "space_cache=v1", "", []string{"-R", "^free-space-tree"}},
		{"single-4k-zlib", "compress=zlib", "", []string{"-m", "single", "-n", "4096"}},
		{"xxhash-nonskinny", "", "", []string{"--csum", "xxhash", "-O", "^skinny-metadata"}},
		{"mixed", "", "", []string{"-M"}},
		// relocation: reloc trees, the data reloc tree, FULL_BACKREF blocks
		{"quota", "", "btrfs quota enable .\nbtrfs quota rescan -w . >/dev/null\nbtrfs qgroup create 1/100 .\nsync\n", nil},
		{"balanced", "compress=zstd", "btrfs balance start --full-balance . >/dev/null\necho after > sv/after\nsync\n", nil},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel() // its own image and loop device: waits on the kernel
			img := filepath.Join(t.TempDir(), "k.img")
			kernelImage(t, img, v.mount, v.extra, v.args...)
			mustBeClean(t, img, Options{CheckDataCsum: true})
		})
	}
	t.Run("mkimages.sh", func(t *testing.T) {
		t.Parallel()
		img := filepath.Join(t.TempDir(), "k.img")
		testimg.MakeKernelImages(t, img)
		mustBeClean(t, img, Options{CheckDataCsum: true})
	})
}

// newMkfsMemory makes an in-memory image with our mkfs.
func newMkfsMemory(t *testing.T, cfg mkfs.Config) *blockdev.Memory {
	t.Helper()
	mem := blockdev.NewMemory(256 << 20)
	if err := mkfs.Make(mem, cfg); err != nil {
		t.Fatal(err)
	}
	return mem
}
