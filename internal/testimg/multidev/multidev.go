// Package multidev builds multi-device btrfs filesystems with the kernel
// for tests (mkfs.btrfs over loop devices, a kernel mount writes the files)
// and describes directory trees so that the kernel's view and ours can be
// compared.
package multidev

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// Spec is a filesystem to make: Devices image files of Size bytes (128 MiB
// when 0) with data profile Data and metadata profile Meta (mkfs.btrfs -d/-m).
type Spec struct {
	Devices    int
	Data, Meta string
	Size       int64
}

// FS is a kernel-made multi-device filesystem, unmounted.
type FS struct {
	// Images are the image files in devid order (mkfs.btrfs numbers the
	// devices in the order given: Images[i] is devid i+1).
	Images []string
	// Loops are the loop devices of Images, attached until Detach or the
	// end of the test.
	Loops    []string
	detached bool
	// Kernel is the kernel's view of the files (View of its mount).
	Kernel map[string]string
}

// Make builds s under dir: mkfs.btrfs over loop devices, a kernel mount,
// the files of Populate, the kernel's view taken after a sync, unmount.
// Needs root and loop devices (the test is skipped otherwise).
func Make(t testing.TB, dir string, s Spec) *FS {
	t.Helper()
	testutil.NeedRootLoop(t)
	if s.Size == 0 {
		s.Size = 128 << 20
	}
	f := &FS{}
	for i := 0; i < s.Devices; i++ {
		img := filepath.Join(dir, fmt.Sprintf("dev%d.img", i+1))
		testutil.SparseFile(t, img, s.Size)
		f.Images = append(f.Images, img)
		f.Loops = append(f.Loops, strings.TrimSpace(testutil.Run(t, "losetup", "--find", "--show", img)))
	}
	t.Cleanup(func() {
		if err := f.Detach(); err != nil {
			t.Error(err)
		}
	})
	args := append([]string{"-q", "-f", "-d", s.Data, "-m", s.Meta}, f.Loops...)
	testutil.Run(t, "mkfs.btrfs", args...)
	mnt := f.Mount(t)
	if err := Populate(mnt); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "sync")
	var err error
	if f.Kernel, err = View(mnt); err != nil {
		t.Fatal(err)
	}
	testutil.Unmount(t, mnt)
	return f
}

func (f *FS) deviceOpts(loops []string) string {
	var o []string
	for _, l := range loops {
		o = append(o, "device="+l)
	}
	return strings.Join(o, ",")
}

// Mount mounts the filesystem read-write from all its loop devices and
// returns the mount point (unmounted by testutil.Unmount or at the end).
func (f *FS) Mount(t testing.TB) string {
	t.Helper()
	return testutil.Mount(t, f.Loops[0], f.deviceOpts(f.Loops[1:]))
}

// MountDegraded mounts the filesystem read-only and degraded from the loop
// devices of the images at keep (indexes into Images) only: the others are
// first forgotten by the kernel's device list. It returns the mount point.
func (f *FS) MountDegraded(t testing.TB, keep ...int) string {
	t.Helper()
	kept := map[int]bool{}
	for _, i := range keep {
		kept[i] = true
	}
	var loops []string
	for i, l := range f.Loops {
		if kept[i] {
			loops = append(loops, l)
		} else {
			testutil.Run(t, "btrfs", "device", "scan", "--forget", l)
		}
	}
	o := "ro,degraded"
	if len(loops) > 1 {
		o += "," + f.deviceOpts(loops[1:])
	}
	return testutil.Mount(t, loops[0], o)
}

// Detach makes the kernel forget the devices and detaches the loop
// devices (once; unmount first). Afterwards btrfs-progs run on one image
// file finds no other device of the filesystem: btrfs check IMG checks
// the filesystem with the other devices missing.
func (f *FS) Detach() error {
	if f.detached {
		return nil
	}
	f.detached = true
	var first error
	for _, l := range f.Loops {
		exec.Command("btrfs", "device", "scan", "--forget", l).Run()
		if out, err := exec.Command("losetup", "-d", l).CombinedOutput(); err != nil && first == nil {
			first = fmt.Errorf("losetup -d %s: %v: %s", l, err, out)
		}
	}
	// A loop device still busy (the kernel releasing the filesystem) is
	// only marked to go away: wait until it has let go of its file.
	deadline := time.Now().Add(10 * time.Second)
	for _, l := range f.Loops {
		bf := "/sys/block/" + filepath.Base(l) + "/loop/backing_file"
		for {
			if _, err := os.Stat(bf); err != nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return first
}

// Populate writes the test files into dir: an inline file, files that span
// many RAID0 stripes (64 KiB each) and chunks of both devices, a sparse
// file, a directory of small files, a symlink and a hard link.
func Populate(dir string) error {
	r := rand.New(rand.NewSource(13))
	data := func(n int) []byte {
		b := make([]byte, n)
		r.Read(b)
		return b
	}
	files := map[string][]byte{
		"small":        []byte("hello from several devices\n"),
		"big":          data(3<<20 + 5000),
		"mid":          data(300 << 10),
		"dir/a":        data(20 << 10),
		"dir/b":        data(70 << 10),
		"dir/sub/c":    data(5000),
		"dir/sub/zero": make([]byte, 128<<10),
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	sp, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		return err
	}
	if _, err := sp.WriteAt(data(64<<10), 1<<20); err != nil {
		return err
	}
	if err := sp.Close(); err != nil {
		return err
	}
	if err := os.Symlink("big", filepath.Join(dir, "link")); err != nil {
		return err
	}
	return os.Link(filepath.Join(dir, "mid"), filepath.Join(dir, "hard"))
}

// FileDesc is how View describes a regular file of mode m holding data.
func FileDesc(m fs.FileMode, data []byte) string {
	h := sha256.Sum256(data)
	return fmt.Sprintf("%v %d %x", m, len(data), h[:8])
}

// View describes the tree at root (a mount or a restored copy): per path,
// type and permissions, size, and a hash of the content or the link target.
func View(root string) (map[string]string, error) {
	return ViewFS(os.DirFS(root), func(name string) (string, error) { return os.Readlink(filepath.Join(root, name)) })
}

// ViewFS is View over an io/fs tree; readlink reads symlink targets.
func ViewFS(fsys fs.FS, readlink func(string) (string, error)) (map[string]string, error) {
	v := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if name == "." {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
		switch {
		case fi.Mode().IsRegular():
			f, err := fsys.Open(name)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("read %s: %w", name, err)
			}
			desc += fmt.Sprintf(" %x", h.Sum(nil)[:8])
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := readlink(name)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		v[name] = desc
		return nil
	})
	return v, err
}

// WithoutDirSizes is v without the sizes of directories, for comparing with
// a copy on another filesystem (btrfs gives a directory the size of its
// names, most others a block).
func WithoutDirSizes(v map[string]string) map[string]string {
	out := make(map[string]string, len(v))
	for k, d := range v {
		if strings.HasPrefix(d, "d") {
			d, _, _ = strings.Cut(d, " ")
		}
		out[k] = d
	}
	return out
}

// MakeSprouted builds what btrfs-progs' fsck-tests/057 builds: a
// filesystem on Images[0] with the files of Populate, made a seed
// (btrfstune -S 1), mounted, sprouted onto Images[1] (btrfs device add),
// remounted read-write and given one more file, "sprouted". Kernel is the
// view of the sprouted filesystem.
func MakeSprouted(t testing.TB, dir string) *FS {
	t.Helper()
	testutil.NeedRootLoop(t)
	if _, err := exec.LookPath("btrfstune"); err != nil {
		t.Skip("btrfstune not installed")
	}
	f := &FS{}
	for i := 0; i < 2; i++ {
		img := filepath.Join(dir, fmt.Sprintf("dev%d.img", i+1))
		testutil.SparseFile(t, img, 256<<20)
		f.Images = append(f.Images, img)
		f.Loops = append(f.Loops, strings.TrimSpace(testutil.Run(t, "losetup", "--find", "--show", img)))
	}
	t.Cleanup(func() {
		if err := f.Detach(); err != nil {
			t.Error(err)
		}
	})
	testutil.Run(t, "mkfs.btrfs", "-q", "-f", f.Loops[0])
	mnt := testutil.Mount(t, f.Loops[0], "")
	if err := Populate(mnt); err != nil {
		t.Fatal(err)
	}
	testutil.Unmount(t, mnt)
	testutil.Run(t, "btrfstune", "-S", "1", f.Loops[0])
	mnt = testutil.Mount(t, f.Loops[0], "ro")
	testutil.Run(t, "btrfs", "device", "add", "-f", "--nodiscard", f.Loops[1], mnt)
	testutil.Run(t, "mount", "-o", "remount,rw", mnt)
	if err := os.WriteFile(filepath.Join(mnt, "sprouted"), []byte("written after the sprout\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, "sync")
	var err error
	if f.Kernel, err = View(mnt); err != nil {
		t.Fatal(err)
	}
	testutil.Unmount(t, mnt)
	return f
}
