package fusefs

import (
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// chattrScript sets and clears inode flags with chattr and tries what
// they forbid; its output (lsattr lines, errors, exit codes) must be the
// kernel btrfs mount's.
const chattrScript = `
touch empty; chattr +C empty; echo "+C empty: $?"; lsattr -d empty
echo data > full; chattr +C full; echo "+C non-empty: $?"; lsattr -d full
mkdir nocow; chattr +C nocow; touch nocow/new; mkdir nocow/sub; lsattr -d nocow nocow/new nocow/sub
echo x > c; chattr +c c; echo "+c: $?"; lsattr -d c; chattr -c c; chattr +m c; echo "+m: $?"; lsattr -d c
echo x > i; chattr +i i; echo "+i: $?"; lsattr -d i
echo y >> i; echo "append to +i: $?"
echo y > i; echo "write to +i: $?"
truncate -s 0 i; echo "truncate +i: $?"
rm -f i; echo "rm +i: $?"
mv i i2; echo "mv +i: $?"
ln i i3; echo "ln +i: $?"
chmod 600 i; echo "chmod +i: $?"
touch i; echo "touch +i: $?"
setfattr -n user.x -v 1 i; echo "setxattr +i: $?"
cat i; chattr -i i; echo "-i: $?"; rm i; echo "rm after -i: $?"
echo x > a; chattr +a a; echo "+a: $?"; lsattr -d a
echo y >> a; echo "append to +a: $?"
echo y > a; echo "write to +a: $?"
truncate -s 0 a; echo "truncate +a: $?"
rm -f a; echo "rm +a: $?"
mv a a2; echo "mv +a: $?"
chmod 600 a; echo "chmod +a: $?"
cat a; chattr -a a
mkdir id; touch id/in; chattr +i id; touch id/new; echo "create in +i dir: $?"; rm -f id/in; echo "rm in +i dir: $?"; chattr -i id
mkdir ad; touch ad/in; chattr +a ad; touch ad/new; echo "create in +a dir: $?"; rm -f ad/in; echo "rm in +a dir: $?"; chattr -a ad
echo x > s; chattr +dSA s; lsattr -d s; chattr -dSA s; lsattr -d s
mkdir ds; chattr +D ds; echo "+D: $?"; lsattr -d ds
echo data > cs; echo x > ci; xfs_io -c "chattr +i" -c "copy_range -l 4 cs" -c "falloc -k 0 4k" -c "falloc 0 8k" ci; chattr -i ci
echo x > ca; xfs_io -a -c "chattr +a" -c "falloc -k 0 4k" -c "falloc 0 8k" -c "copy_range -l 4 cs" ca; chattr -a ca; lsattr -d ca
echo x > wi; xfs_io -c "chattr +i" -c "pwrite -q 0 4" -c "truncate 2" -c "chattr -i" wi; wc -c < wi
`

// TestChattrLikeKernel: chattr/lsattr through FS_IOC_GETFLAGS/SETFLAGS:
// +C (NODATACOW), +c, +i, +a, +d, +S, +A, +D with the kernel's rules, and
// the flags on disk are the kernel's (a kernel mount of our image shows
// the same lsattr).
func TestChattrLikeKernel(t *testing.T) {
	for _, c := range []string{"chattr", "lsattr", "setfattr", "truncate", "xfs_io"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed (e2fsprogs, attr, coreutils, xfsprogs)", c)
		}
	}
	run := func(t *testing.T, dir, script string) string {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	var ours, oursImg string
	testutil.NeedRootLoop(t)
	needFuse(t)
	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20)
	kdir := testutil.LoopMount(t, kimg, "")
	oursImg = filepath.Join(t.TempDir(), "ours.img")
	testutil.Mkfs(t, oursImg, 256<<20)
	tm := mountImage(t, oursImg, Options{})
	kout := run(t, kdir, chattrScript)
	ours = run(t, tm.dir, chattrScript)
	if kout != ours {
		t.Errorf("differs from the kernel's btrfs:\n%s\nkernel's output:\n%s", diffLines(kout, ours), kout)
	}
	const list = "lsattr -R . 2>&1 | sort"
	shown := run(t, tm.dir, list)
	tm.unmount()
	checktest.Image(t, oursImg)
	odir := testutil.LoopMount(t, oursImg, "ro")
	if k := run(t, odir, list); k != shown {
		t.Errorf("a kernel mount of our image shows other flags:\n%s", diffLines(shown, k))
	}
}

// TestChattrCtimeLikeKernel: chattr changes the ctime, as on kernel btrfs.
// Without the writeback cache only: in that mode (the default) the kernel
// keeps a regular file's ctime and mtime itself (fuse_get_cache_mask) and
// takes neither from the daemon while the inode is cached, and FUSE has no
// way for an ioctl to tell it; the stored ctime is right, and a stat shows
// it once the kernel has dropped the inode.
func TestChattrCtimeLikeKernel(t *testing.T) {
	if _, err := exec.LookPath("chattr"); err != nil {
		t.Skip("chattr (e2fsprogs) not installed")
	}
	sideBySide(t, "", Options{NoWritebackCache: true}, func(t *testing.T, dir string) string {
		cmd := exec.Command("sh", "-c", `touch ct; c1=$(stat -c %z ct); sleep 0.05; chattr +A ct; chattr -A ct; [ "$(stat -c %z ct)" != "$c1" ] && echo "chattr sets ctime"; mkdir cd; c1=$(stat -c %z cd); sleep 0.05; chattr +A cd; [ "$(stat -c %z cd)" != "$c1" ] && echo "chattr sets a directory's ctime"`)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	})
}
