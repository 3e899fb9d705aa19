package fusefs

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// btrfsIoctl calls cmd on path with buf as the argument; "ok" or the errno.
func btrfsIoctlAt(path string, cmd uint32, buf []byte) string {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		return "open: " + errnoOfErr(err).Error()
	}
	defer unix.Close(fd)
	return btrfsIoctlFd(fd, cmd, buf)
}

func btrfsIoctlFd(fd int, cmd uint32, buf []byte) string {
	var p unsafe.Pointer
	if len(buf) > 0 {
		p = unsafe.Pointer(&buf[0])
	}
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(cmd), uintptr(p)); e != 0 {
		return e.Error()
	}
	return "ok"
}

// volArgs is a btrfs_ioctl_vol_args(_v2) naming name, with fd and flags.
func volArgs(v2 bool, fd int, flags uint64, name string) []byte {
	b := make([]byte, volArgsSize)
	binary.NativeEndian.PutUint64(b, uint64(fd))
	if v2 {
		binary.NativeEndian.PutUint64(b[volArgsV2Flags:], flags)
		copy(b[volArgsV2Name:], name)
	} else {
		copy(b[volArgsName:], name)
	}
	return b
}

// inoLookupAt is BTRFS_IOC_INO_LOOKUP of (tree, obj) on path.
func inoLookupAt(path string, tree, obj uint64) string {
	b := make([]byte, inoLookupSize)
	binary.NativeEndian.PutUint64(b, tree)
	binary.NativeEndian.PutUint64(b[8:], obj)
	if r := btrfsIoctlAt(path, btrfsIocInoLookup, b); r != "ok" {
		return r
	}
	name := b[inoLookupName:]
	return fmt.Sprintf("tree=%d path=%q", binary.NativeEndian.Uint64(b), name[:strings.IndexByte(string(name), 0)])
}

func u64Ioctl(path string, cmd uint32) string {
	b := make([]byte, 8)
	if r := btrfsIoctlAt(path, cmd, b); r != "ok" {
		return r
	}
	return fmt.Sprint(binary.NativeEndian.Uint64(b))
}

func inoOf(t *testing.T, p string) uint64 {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// btrfsIoctlReport runs the subvolume, flags, lookup, info and label
// ioctls in dir and says what each returned and what the tree looks like.
func btrfsIoctlReport(t *testing.T, dir string) string {
	var b strings.Builder
	say := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	p := func(rel string) string { return filepath.Join(dir, rel) }
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(p("d/e"), 0o755))
	must(os.WriteFile(p("d/e/file"), []byte("file"), 0o644))

	say("subvol create v1 sv1: %s", btrfsIoctlAt(dir, btrfsIocSubvolCreate, volArgs(false, 0, 0, "sv1")))
	say("subvol create v2 sv: %s", btrfsIoctlAt(dir, btrfsIocSubvolCreateV2, volArgs(true, 0, 0, "sv")))
	say("subvol create again: %s", btrfsIoctlAt(dir, btrfsIocSubvolCreateV2, volArgs(true, 0, 0, "sv")))
	say("subvol create a/b: %s", btrfsIoctlAt(dir, btrfsIocSubvolCreateV2, volArgs(true, 0, 0, "a/b")))
	say("subvol create empty: %s", btrfsIoctlAt(dir, btrfsIocSubvolCreate, volArgs(false, 0, 0, "")))
	say("subvol create ..: %s", btrfsIoctlAt(dir, btrfsIocSubvolCreate, volArgs(false, 0, 0, "..")))
	must(os.WriteFile(p("sv/x"), []byte("data in sv\n"), 0o644))

	say("lookup . 256: %s", inoLookupAt(dir, 0, 256))
	say("lookup sv 256: %s", inoLookupAt(p("sv"), 0, 256))
	say("lookup file: %s", inoLookupAt(dir, 0, inoOf(t, p("d/e/file"))))
	say("lookup d/e: %s", inoLookupAt(p("d"), 0, inoOf(t, p("d/e"))))
	say("lookup missing: %s", inoLookupAt(dir, 0, 100000))

	open, err := os.Create(p("sv/open"))
	must(err)
	_, err = open.WriteString("written, not closed\n") // buffered: the snapshot must have it
	must(err)
	src, err := unix.Open(p("sv"), unix.O_RDONLY, 0)
	must(err)
	say("snap snap1: %s", btrfsIoctlAt(dir, btrfsIocSnapCreate, volArgs(false, src, 0, "snap1")))
	data, err := os.ReadFile(p("snap1/open"))
	say("snap1/open: %q %v", data, err)
	open.Close()
	say("snap ro snap2: %s", btrfsIoctlAt(p("d"), btrfsIocSnapCreateV2, volArgs(true, src, subvolRdonly, "snap2")))
	say("snap bad flags: %s", btrfsIoctlAt(dir, btrfsIocSnapCreateV2, volArgs(true, src, 1<<20, "snap3")))
	unix.Close(src)
	notRoot, err := unix.Open(p("d"), unix.O_RDONLY, 0)
	must(err)
	say("snap of a plain directory: %s", btrfsIoctlAt(dir, btrfsIocSnapCreate, volArgs(false, notRoot, 0, "snap4")))
	unix.Close(notRoot)
	other, err := unix.Open(os.TempDir(), unix.O_RDONLY, 0)
	must(err)
	say("snap of another filesystem: %s", btrfsIoctlAt(dir, btrfsIocSnapCreate, volArgs(false, other, 0, "snap5")))
	unix.Close(other)
	data, err = os.ReadFile(p("d/snap2/x"))
	say("snap2/x: %q %v", data, err)
	say("getflags . sv d/snap2 d: %s %s %s %s", u64Ioctl(dir, btrfsIocSubvolGetflags), u64Ioctl(p("sv"), btrfsIocSubvolGetflags),
		u64Ioctl(p("d/snap2"), btrfsIocSubvolGetflags), u64Ioctl(p("d"), btrfsIocSubvolGetflags))
	say("write in ro snapshot: %v", errnoOfErr(os.WriteFile(p("d/snap2/y"), nil, 0o644)))
	say("setflags d: %s", btrfsIoctlAt(p("d"), btrfsIocSubvolSetflags, make([]byte, 8)))
	say("setflags snap2 rw: %s", btrfsIoctlAt(p("d/snap2"), btrfsIocSubvolSetflags, make([]byte, 8)))
	say("write in rw snapshot: %v", errnoOfErr(os.WriteFile(p("d/snap2/y"), nil, 0o644)))
	ro := binary.NativeEndian.AppendUint64(nil, subvolRdonly)
	say("setflags sv1 ro: %s", btrfsIoctlAt(p("sv1"), btrfsIocSubvolSetflags, ro))
	say("setflags sv1 bad: %s", btrfsIoctlAt(p("sv1"), btrfsIocSubvolSetflags, binary.NativeEndian.AppendUint64(nil, 1<<40)))

	say("destroy snap1: %s", btrfsIoctlAt(dir, btrfsIocSnapDestroy, volArgs(false, 0, 0, "snap1")))
	say("destroy d (not a subvolume): %s", btrfsIoctlAt(dir, btrfsIocSnapDestroy, volArgs(false, 0, 0, "d")))
	say("destroy missing: %s", btrfsIoctlAt(dir, btrfsIocSnapDestroyV2, volArgs(true, 0, 0, "nothing")))
	for _, name := range []string{"", ".", "..", "sv1/x", "d/../sv1"} {
		say("destroy %q: %s", name, btrfsIoctlAt(dir, btrfsIocSnapDestroy, volArgs(false, 0, 0, name)))
	}
	top := volArgs(true, 0, subvolSpecByID, "")
	binary.NativeEndian.PutUint64(top[volArgsV2Name:], 5)
	say("destroy id 5 (top level): %s", btrfsIoctlAt(dir, btrfsIocSnapDestroyV2, top))
	id := u64FromLookup(p("d/snap2"))
	byID := volArgs(true, 0, subvolSpecByID, "")
	binary.NativeEndian.PutUint64(byID[volArgsV2Name:], id)
	say("destroy snap2 by id: %s", btrfsIoctlAt(dir, btrfsIocSnapDestroyV2, byID))
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	ents, _ = os.ReadDir(p("d"))
	for _, e := range ents {
		names = append(names, "d/"+e.Name())
	}
	say("entries: %v", names)

	say("default sv: %s", btrfsIoctlAt(dir, btrfsIocDefaultSubvol, binary.NativeEndian.AppendUint64(nil, u64FromLookup(p("sv")))))
	say("default missing: %s", btrfsIoctlAt(dir, btrfsIocDefaultSubvol, binary.NativeEndian.AppendUint64(nil, 99999)))
	say("default 2: %s", btrfsIoctlAt(dir, btrfsIocDefaultSubvol, binary.NativeEndian.AppendUint64(nil, 2)))

	label := make([]byte, 256)
	copy(label, "gobtrfs-label")
	say("set label: %s", btrfsIoctlAt(dir, btrfsIocSetFslabel, label))
	say("set label too long: %s", btrfsIoctlAt(dir, btrfsIocSetFslabel, []byte(strings.Repeat("x", 256))))
	got := make([]byte, 256)
	say("get label: %s %q", btrfsIoctlAt(p("d"), btrfsIocGetFslabel, got), got[:strings.IndexByte(string(got), 0)])

	// FS_INFO asks for every optional part (on FUSE the request flags do not arrive; we fill all)
	info := make([]byte, fsInfoSize)
	binary.NativeEndian.PutUint64(info[48:], fsInfoCsumInfo|fsInfoGeneration|fsInfoMetaUUID)
	r := btrfsIoctlAt(dir, btrfsIocFsInfo, info)
	le := binary.NativeEndian
	say("fs info: %s max_id=%d devices=%d nodesize=%d sectorsize=%d clone_alignment=%d csum=%d/%d flags=%d metadata_uuid=fsid:%v",
		r, le.Uint64(info), le.Uint64(info[8:]), le.Uint32(info[32:]), le.Uint32(info[36:]), le.Uint32(info[40:]),
		le.Uint16(info[44:]), le.Uint16(info[46:]), le.Uint64(info[48:]), string(info[16:32]) == string(info[64:80]))
	feat := make([]byte, 24)
	say("features: %s %x %x %x", btrfsIoctlAt(dir, btrfsIocGetFeatures, feat), le.Uint64(feat), le.Uint64(feat[8:]), le.Uint64(feat[16:]))
	say("sync: %s", btrfsIoctlAt(dir, btrfsIocSync, nil))
	tr := make([]byte, 8)
	say("start sync: %s transid>0=%v", btrfsIoctlAt(dir, btrfsIocStartSync, tr), le.Uint64(tr) > 0)
	say("wait sync: %s", btrfsIoctlAt(dir, btrfsIocWaitSync, tr))
	return b.String()
}

// u64FromLookup is the subvolume ID of path (INO_LOOKUP with treeid 0).
func u64FromLookup(path string) uint64 {
	b := make([]byte, inoLookupSize)
	binary.NativeEndian.PutUint64(b[8:], 256)
	btrfsIoctlAt(path, btrfsIocInoLookup, b)
	return binary.NativeEndian.Uint64(b)
}

// btrfsToolScript is what the btrfs tool does on the mount: the commands
// that reach the daemon (the others stop at statfs f_type, see
// btrfsioctl.go). `property set ro` warns "cannot read subvolume info" on
// FUSE (libbtrfsutil's subvolume info wants f_type BTRFS), then works.
const btrfsToolScript = `
btrfs filesystem sync . ; echo "sync rc=$?"
btrfs property get . ro; btrfs property set . label tool-label; btrfs property get . label
btrfs filesystem label .; btrfs filesystem label . relabeled; btrfs filesystem label .
touch c; btrfs property set c compression zstd; btrfs property get c compression; lsattr c | cut -c1-22
btrfs property set c compression none; lsattr c | cut -c1-22; btrfs property set c compression bogus; echo "bogus rc=$?"
btrfs property set c compression ""; lsattr c | cut -c1-22; btrfs property get c compression; echo "get rc=$?"
btrfs property set . ro true 2>&1 | grep -v 'cannot read subvolume info'; touch z; echo "touch in ro rc=$?"; btrfs property set . ro false 2>&1 | grep -v 'cannot read subvolume info'; touch z; echo "touch rc=$?"
btrfs subvolume set-default 5 . ; echo "set-default rc=$?"; btrfs subvolume set-default 257 . ; echo "set-default rc=$?"
`

// TestBtrfsIoctlsLikeKernel compares the btrfs ioctls that reach a FUSE
// daemon, and the btrfs commands that use them, with a kernel mount; then
// a kernel mount of our image shows the same subvolumes, default, label
// and flags as the kernel's own image.
func TestBtrfsIoctlsLikeKernel(t *testing.T) {
	for _, c := range []string{"btrfs", "lsattr"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed (btrfs-progs, e2fsprogs)", c)
		}
	}
	testutil.NeedRootLoop(t)
	needFuse(t)
	sh := func(dir, script string) string {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	report := func(t *testing.T, dir string) string {
		return btrfsIoctlReport(t, dir) + sh(dir, btrfsToolScript)
	}
	const after = `btrfs subvolume list . | sed 's/gen [0-9]* //'; btrfs subvolume get-default . | sed 's/gen [0-9]* //'
btrfs filesystem label .; btrfs property get sv1 ro; btrfs property get sv ro; lsattr -d sv1 | cut -c1-22; cat sv/x`
	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20)
	kdir := testutil.LoopMount(t, kimg, "")
	oimg := filepath.Join(t.TempDir(), "ours.img")
	testutil.Mkfs(t, oimg, 256<<20)
	tm := mountImage(t, oimg, Options{})
	krep, orep := report(t, kdir), report(t, tm.dir)
	if krep != orep {
		t.Errorf("differs from the kernel's btrfs:\n%s\nkernel's report:\n%s", diffLines(krep, orep), krep)
	}
	kafter := sh(kdir, after)
	tm.unmount()
	checktest.Image(t, oimg)
	odir := testutil.LoopMount(t, oimg, "ro,subvolid=5")
	if oafter := sh(odir, after); oafter != kafter {
		t.Errorf("a kernel mount of our image differs:\n%s\nkernel's own:\n%s", diffLines(kafter, oafter), kafter)
	}
}
