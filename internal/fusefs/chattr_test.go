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

// TestChattrCtimeLikeKernel: chattr changes the ctime that stat shows
// right after it and that a new mount reads back (generic/277), as on
// kernel btrfs, with the writeback cache (the default: the kernel keeps a
// regular file's ctime, ctimestale.go) and without it.
func TestChattrCtimeLikeKernel(t *testing.T) {
	for _, c := range []string{"chattr", "python3"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed (e2fsprogs, python3)", c)
		}
	}
	testutil.NeedRootLoop(t)
	needFuse(t)
	sh := func(t *testing.T, dir, script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	// written: a file with data written just before (the kernel holds
	// dirty times for it), then chattr on it and on an empty file and a
	// directory; the ctimes shown are kept in files for the second step
	// co is written, then FS_IOC_SETFLAGS'd (chattr +A) through the same
	// descriptor, with no close of any descriptor of it (each close
	// flushes the kernel's times) nor a stat between: the kernel flushes
	// its own ctime, of the write, at the close; the one shown and kept
	// must be chattr's, after marker's
	const change = `echo data > cw; touch ct; mkdir cd; stat -c %z ct cw cd > .c1; sleep 0.05
chattr +A ct; chattr -A ct; chattr +A cw; chattr +A cd; stat -c %z ct cw cd > .c2
paste .c1 .c2 | while read d1 t1 z1 d2 t2 z2; do [ "$t1" != "$t2" ] && echo changed || echo "not changed"; done
python3 -c 'import fcntl, os, struct, time
fd = os.open("co", os.O_WRONLY | os.O_CREAT, 0o644); time.sleep(0.05); os.write(fd, b"a"); time.sleep(0.05)
os.close(os.open("marker", os.O_WRONLY | os.O_CREAT, 0o644)); time.sleep(0.05)
fcntl.ioctl(fd, 0x40086602, struct.pack("i", 0x80))
os.close(fd)'
echo "co changed after marker: $(find co -cnewer marker)"; stat -c %z ct cw cd co > .c2`
	const after = `stat -c %z ct cw cd co | cmp -s - .c2 && echo "same ctimes after mount" || { echo "other ctimes after mount:"; stat -c %z ct cw cd co; cat .c2; }
echo "co changed after marker: $(find co -cnewer marker)"`
	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20)
	kdir := testutil.LoopMount(t, kimg, "")
	kout := sh(t, kdir, change)
	testutil.Unmount(t, kdir)
	kdir = testutil.LoopMount(t, kimg, "")
	kout += sh(t, kdir, after)
	for _, mode := range cacheModes {
		t.Run(mode.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "ours.img")
			testutil.Mkfs(t, img, 256<<20)
			tm := mountImage(t, img, mode.o)
			out := sh(t, tm.dir, change)
			tm.unmount()
			checktest.Image(t, img)
			tm = mountImage(t, img, mode.o)
			out += sh(t, tm.dir, after)
			tm.unmount()
			if out != kout {
				t.Errorf("differs from the kernel's btrfs:\n%s\nkernel's output:\n%s", diffLines(kout, out), kout)
			}
		})
	}
}
