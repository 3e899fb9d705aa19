package fusefs

import (
	"fmt"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// newInodeFlags makes files, a directory, a file in it and a fifo in dir.
func makeNewInodes(t *testing.T, dir string) {
	for _, f := range []string{"empty", "d/in"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte(strings.Repeat("x", 10000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(dir, "fifo"), unix.S_IFIFO|0o644, 0); err != nil {
		t.Fatal(err)
	}
}

// inodeFlagsOf reads the NODATACOW/NODATASUM flags of the new inodes from
// an unmounted image with the library.
func inodeFlagsOf(t *testing.T, img string) string {
	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	var b strings.Builder
	for _, p := range []string{"empty", "data", "d", "d/in", "fifo"} {
		fi, err := fsys.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		fl := fi.Sys().(*gobtrfs.Stat).Flags
		fmt.Fprintf(&b, "%s: nodatacow %v nodatasum %v\n", p, fl&item.InodeNoDataCow != 0, fl&item.InodeNoDataSum != 0)
	}
	return b.String()
}

// TestNoDataCowLikeKernel: -o nodatacow and -o nodatasum give new regular
// files the inode flags the kernel's btrfs gives them.
func TestNoDataCowLikeKernel(t *testing.T) {
	testutil.NeedRootLoop(t)
	needFuse(t)
	for _, c := range []struct {
		kopts string
		o     Options
	}{{"nodatacow", Options{NoDataCow: true}}, {"nodatasum", Options{NoDataCsum: true}}} {
		t.Run(c.kopts, func(t *testing.T) {
			kimg := filepath.Join(t.TempDir(), "kernel.img")
			testutil.Mkfs(t, kimg, 256<<20)
			kdir := testutil.LoopMount(t, kimg, c.kopts)
			makeNewInodes(t, kdir)
			testutil.Unmount(t, kdir)
			oimg := filepath.Join(t.TempDir(), "ours.img")
			testutil.Mkfs(t, oimg, 256<<20)
			tm := mountImage(t, oimg, c.o)
			makeNewInodes(t, tm.dir)
			tm.unmount()
			checktest.Image(t, oimg)
			if k, o := inodeFlagsOf(t, kimg), inodeFlagsOf(t, oimg); k != o {
				t.Errorf("inode flags differ from the kernel's:\n%s\nkernel's:\n%s", diffLines(k, o), k)
			}
		})
	}
}
