package fusefs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// ioctlUserScript issues btrfs ioctls from python3 (run as nobody):
// "op path arg" lines in, "op path: errno" lines out.
const ioctlUserScript = `
import errno, fcntl, os, struct, sys
def call(path, cmd, buf):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return "open: " + errno.errorcode[e.errno]
    try:
        fcntl.ioctl(fd, cmd, buf, True)
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
    finally:
        os.close(fd)
def vol(name, fd=0, v2=False, flags=0):
    b = bytearray(4096)
    struct.pack_into("q", b, 0, fd)
    if v2:
        struct.pack_into("Q", b, 16, flags)
        b[56:56+len(name)] = name.encode()
    else:
        b[8:8+len(name)] = name.encode()
    return b
C = {k: int(v, 0) for k, v in (a.split("=") for a in sys.argv[1:])}
def u64(v): return bytearray(struct.pack("Q", v))
def snap(dst, src, name):
    fd = os.open(src, os.O_RDONLY)
    try:
        return call(dst, C["snap"], vol(name, fd, True))
    finally:
        os.close(fd)
print("setflags ro root's subvolume:", call("rootsv", C["setflags"], u64(2)))
print("setflags ro own subvolume:", call("open/nobsv", C["setflags"], u64(2)))
print("setflags rw own subvolume:", call("open/nobsv", C["setflags"], u64(0)))
print("setflags own plain dir:", call("open/nobdir", C["setflags"], u64(2)))
print("setflags root's plain dir:", call("open", C["setflags"], u64(2)))
print("getflags root's subvolume:", call("rootsv", C["getflags"], u64(0)))
print("create in root's 0755 dir:", call(".", C["create"], vol("x")))
print("create in 0777 dir:", call("open", C["create"], vol("nob2")))
print("snapshot root's subvolume:", snap("open", "rootsv", "s1"))
print("snapshot own subvolume:", snap("open", "open/nobsv", "s2"))
print("destroy own subvolume:", call("open", C["destroy"], vol("nob2")))
print("destroy root's subvolume:", call(".", C["destroy"], vol("rootsv")))
print("default subvol:", call(".", C["default"], u64(5)))
print("set label:", call(".", C["setlabel"], bytearray(256)))
b = bytearray(4096); struct.pack_into("QQ", b, 0, 0, 257)
print("ino lookup:", call(".", C["inolookup"], b))
`

// TestBtrfsIoctlsUnprivileged: the btrfs ioctls from an unprivileged user
// (nobody) on subvolumes and directories of root and of its own answer as
// on a kernel mount: ownership decides SUBVOL_SETFLAGS and snapshots,
// CAP_SYS_ADMIN deletes, the default subvolume, the label and INO_LOOKUP.
func TestBtrfsIoctlsUnprivileged(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed (util-linux)")
	}
	// the system's python3: nobody may not reach root's own (pyenv shims)
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	testutil.NeedRootLoop(t)
	needFuse(t)
	script := filepath.Join(t.TempDir(), "ioctls.py")
	if err := os.WriteFile(script, []byte(ioctlUserScript), 0o644); err != nil {
		t.Fatal(err)
	}
	openUp(t, filepath.Dir(script))
	args := []string{"--reuid=65534", "--regid=65534", "--clear-groups", py, script,
		fmt.Sprintf("setflags=%#x", btrfsIocSubvolSetflags), fmt.Sprintf("getflags=%#x", btrfsIocSubvolGetflags),
		fmt.Sprintf("create=%#x", btrfsIocSubvolCreate), fmt.Sprintf("snap=%#x", btrfsIocSnapCreateV2),
		fmt.Sprintf("destroy=%#x", btrfsIocSnapDestroy), fmt.Sprintf("default=%#x", btrfsIocDefaultSubvol),
		fmt.Sprintf("setlabel=%#x", btrfsIocSetFslabel), fmt.Sprintf("inolookup=%#x", btrfsIocInoLookup)}
	asNobody := func(t *testing.T, dir string) string {
		cmd := exec.Command("setpriv", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("ioctls as nobody: %v\n%s", err, out)
		}
		return string(out)
	}
	report := func(t *testing.T, dir string) string {
		openUp(t, dir)
		for _, step := range []struct {
			what string
			err  error
		}{
			{"create rootsv", errOf(btrfsIoctlAt(dir, btrfsIocSubvolCreate, volArgs(false, 0, 0, "rootsv")))},
			{"mkdir open", os.Mkdir(filepath.Join(dir, "open"), 0o777)},
			{"chmod open", os.Chmod(filepath.Join(dir, "open"), 0o777)},
			{"create nobsv", errOf(btrfsIoctlAt(filepath.Join(dir, "open"), btrfsIocSubvolCreate, volArgs(false, 0, 0, "nobsv")))},
			{"chown nobsv", os.Chown(filepath.Join(dir, "open/nobsv"), 65534, 65534)},
			{"mkdir nobdir", os.Mkdir(filepath.Join(dir, "open/nobdir"), 0o755)},
			{"chown nobdir", os.Chown(filepath.Join(dir, "open/nobdir"), 65534, 65534)},
		} {
			if step.err != nil {
				t.Fatalf("%s: %v", step.what, step.err)
			}
		}
		return asNobody(t, dir)
	}
	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20)
	kdir := testutil.LoopMount(t, kimg, "")
	oimg := filepath.Join(t.TempDir(), "ours.img")
	testutil.Mkfs(t, oimg, 256<<20)
	tm := mountImage(t, oimg, Options{AllowOther: true})
	krep, orep := report(t, kdir), report(t, tm.dir)
	if krep != orep {
		t.Errorf("differs from the kernel's btrfs:\n%s\nkernel's report:\n%s", diffLines(krep, orep), krep)
	}
	// read-only: the same calls, refused as the kernel refuses them
	if out, err := exec.Command("mount", "-o", "remount,ro", kdir).CombinedOutput(); err != nil {
		t.Fatalf("remount ro: %v\n%s", err, out)
	}
	tm.unmount()
	ro := mountImage(t, oimg, Options{AllowOther: true, ReadOnly: true})
	if err := os.Chmod(filepath.Dir(ro.dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if krep, orep := asNobody(t, kdir), asNobody(t, ro.dir); krep != orep {
		t.Errorf("read-only: differs from the kernel's btrfs:\n%s\nkernel's report:\n%s", diffLines(krep, orep), krep)
	}
}

func errOf(r string) error {
	if r == "ok" {
		return nil
	}
	return fmt.Errorf("%s", r)
}
