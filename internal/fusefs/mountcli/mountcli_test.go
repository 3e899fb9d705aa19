package mountcli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
)

// gobtrfsBin builds cmd/gobtrfs once per test binary.
var builtBin string

func gobtrfsBin(t *testing.T) string {
	t.Helper()
	if builtBin != "" {
		return builtBin
	}
	dir, err := os.MkdirTemp("", "gobtrfs-bin")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gobtrfs")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/gobtrfs/gobtrfs/cmd/gobtrfs").CombinedOutput()
	if err != nil {
		t.Fatalf("build gobtrfs: %v\n%s", err, out)
	}
	builtBin = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

func needFuse(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("FUSE unavailable: %v", err)
	}
	f.Close()
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			t.Skip("FUSE unavailable: not root and no fusermount3")
		}
	}
}

func mounted(dir string) bool {
	abs, _ := filepath.Abs(dir)
	b, _ := os.ReadFile("/proc/self/mounts")
	return strings.Contains(string(b), " "+abs+" fuse.gobtrfs ")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// unlocked reports that no process holds the image's lock (the mount
// process has written everything back and exited).
func unlocked(img string) bool {
	f, err := os.Open(img)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}

// unmountDir unmounts dir (as root with umount, else fusermount3 -u).
func unmountDir(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("umount", dir)
	if os.Geteuid() != 0 {
		cmd = exec.Command("fusermount3", "-u", dir)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unmount %s: %v\n%s", dir, err, out)
	}
}

// TestDefaultMountBackground: `gobtrfs mount --daemon` with no arguments makes
// ./gobtrfs.img and ./mnt, returns once mounted; umount writes everything
// back; a foreground mount then stops cleanly on SIGINT.
func TestDefaultMountBackground(t *testing.T) {
	needFuse(t)
	bin := gobtrfsBin(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "gobtrfs.img"), filepath.Join(dir, "mnt")
	cmd := exec.Command(bin, "mount", "--daemon")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gobtrfs mount --daemon: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if mounted(mnt) {
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	if !mounted(mnt) {
		t.Fatalf("gobtrfs mount --daemon returned but %s is not mounted", mnt)
	}
	if st, err := os.Stat(img); err != nil || st.Size() != DefaultImageSize {
		t.Fatalf("default image: %v", err)
	}
	data := bytes.Repeat([]byte("persist "), 10000)
	if err := os.WriteFile(filepath.Join(mnt, "file"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// a second mount of the same image joins the first one's daemon
	// (join.go), saying so, and returns at once
	second := t.TempDir()
	out, err := exec.Command(bin, "mount", "-o", "lock_wait=0", img, second).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "served by a gobtrfs mount on "+mnt) {
		t.Errorf("second mount: %v, %s", err, out)
	} else if b, err := os.ReadFile(filepath.Join(second, "file")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("file through the second mount: %d bytes, %v", len(b), err)
	} else {
		unmountDir(t, second)
	}
	unmountDir(t, mnt)
	waitFor(t, "the background mount to exit", func() bool { return unlocked(img) })
	checktest.Image(t, img)

	// foreground, then SIGINT
	fg := exec.Command(bin, "mount")
	fg.Dir = dir
	var stderr bytes.Buffer
	fg.Stderr = &stderr
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the foreground mount", func() bool { return mounted(mnt) })
	if b, err := os.ReadFile(filepath.Join(mnt, "file")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("file after remount: %d bytes, %v", len(b), err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "second"), []byte("buffered at SIGINT"), 0o644); err != nil {
		t.Fatal(err)
	}
	fg.Process.Signal(syscall.SIGINT)
	if err := fg.Wait(); err != nil {
		t.Fatalf("foreground mount after SIGINT: %v\n%s", err, stderr.String())
	}
	if mounted(mnt) {
		t.Errorf("still mounted after SIGINT")
	}
	if !strings.Contains(stderr.String(), "written back and committed") {
		t.Errorf("stderr: %s", stderr.String())
	}
	checktest.Image(t, img)
	out, err = exec.Command(bin, "cat", img, "second").CombinedOutput()
	if err != nil || string(out) != "buffered at SIGINT" {
		t.Errorf("data written before SIGINT: %q %v", out, err)
	}
}

// TestSignalWhileBusy: SIGTERM on a busy mount keeps serving; once the
// user leaves, another SIGTERM unmounts.
func TestSignalWhileBusy(t *testing.T) {
	needFuse(t)
	bin := gobtrfsBin(t)
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "m")
	if err := CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(mnt, 0o755)
	fg := exec.Command(bin, "mount", "-o", "commit=5,compress=zstd", img, mnt)
	stderr := &lockedBuffer{}
	fg.Stderr = stderr
	if err := fg.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if mounted(mnt) {
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	waitFor(t, "mount", func() bool { return mounted(mnt) })
	f, err := os.Create(filepath.Join(mnt, "busy"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte("z"), 1<<20))
	fg.Process.Signal(syscall.SIGTERM)
	waitFor(t, "the busy message", func() bool { return strings.Contains(stderr.String(), "still mounted") })
	if !mounted(mnt) {
		t.Fatalf("unmounted while busy")
	}
	f.Close()
	fg.Process.Signal(syscall.SIGTERM)
	if err := fg.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	checktest.Image(t, img)
}

// TestMountHelper: mount(8) with -t fuse.gobtrfs runs
// /sbin/mount.fuse.gobtrfs IMAGE DIR -o OPTIONS, which returns once mounted.
func TestMountHelper(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to install /sbin/mount.fuse.gobtrfs and run mount(8)")
	}
	const helper = "/sbin/mount.fuse.gobtrfs"
	if _, err := os.Lstat(helper); err == nil {
		t.Skipf("%s already exists; not replacing it", helper)
	}
	bin := gobtrfsBin(t)
	if err := os.Symlink(bin, helper); err != nil {
		t.Skipf("cannot install %s: %v", helper, err)
	}
	t.Cleanup(func() { os.Remove(helper) })
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "m")
	if err := CreateImage(img, 256<<20); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(mnt, 0o755)
	out, err := exec.Command("mount", "-t", "fuse.gobtrfs", "-o", "compress=zstd,commit=10", img, mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("mount -t fuse.gobtrfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if mounted(mnt) {
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	if !mounted(mnt) {
		t.Fatalf("mount(8) returned but nothing is mounted")
	}
	if err := os.WriteFile(filepath.Join(mnt, "x"), bytes.Repeat([]byte("compressible "), 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	// mount(8) runs the helper for -o remount too
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount -o remount,ro: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(mnt, "y"), nil, 0o644); !errors.Is(err, syscall.EROFS) {
		t.Errorf("write after remount,ro: %v", err)
	}
	if out, err := exec.Command("mount", "-o", "remount,rw", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount -o remount,rw: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(mnt, "y"), nil, 0o644); err != nil {
		t.Errorf("write after remount,rw: %v", err)
	}
	unmountDir(t, mnt)
	waitFor(t, "the helper to exit", func() bool { return unlocked(img) })
	checktest.Image(t, img)
	// read-only through the helper too
	out, err = exec.Command("mount", "-t", "fuse.gobtrfs", "-o", "ro", img, mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("mount -o ro: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(mnt, "x")); err != nil || len(b) != 13*100000 {
		t.Errorf("read through ro helper mount: %d %v", len(b), err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "y"), nil, 0o644); err == nil {
		t.Errorf("write to a read-only mount succeeded")
	}
	unmountDir(t, mnt)
	waitFor(t, "the helper to exit", func() bool { return unlocked(img) })
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestParse(t *testing.T) {
	a, err := Parse([]string{"img", "dir", "-o", "rw,noauto,compress=lzo,commit=7,subvolid=256,allow_other"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Background || a.Image != "img" || a.Mountpoint != "dir" || a.Options.Compress != "lzo" ||
		a.Options.CommitInterval != 7*time.Second || a.Options.SubvolID != 256 || !a.Options.AllowOther {
		t.Errorf("helper parse: %+v", a)
	}
	a, err = Parse(nil, false)
	if err != nil || !a.Defaults || a.Background || a.Image != DefaultImage {
		t.Errorf("no arguments: %+v %v", a, err)
	}
	if _, err := Parse([]string{"-o", "bogus", "a", "b"}, false); err == nil {
		t.Errorf("unknown option accepted")
	}
	a, err = Parse([]string{"img", "dir", "-o", "remount,ro,noatime"}, true)
	if err != nil || !a.Remount || a.RemountOptions != "remount,ro,noatime" {
		t.Errorf("remount: %+v %v", a, err)
	}
	if _, err := Parse([]string{"a"}, false); err == nil {
		t.Errorf("one operand accepted")
	}
	// -d is debug (libfuse, sshfs), --daemon the background
	a, err = Parse([]string{"-d", "img", "dir"}, false)
	if err != nil || a.Background || !a.Options.Debug {
		t.Errorf("-d: %+v %v", a, err)
	}
	a, err = Parse([]string{"img", "-fdoro", "dir"}, true)
	if err != nil || a.Background || !a.Options.Debug || !a.Options.ReadOnly || a.Mountpoint != "dir" {
		t.Errorf("-fdoro: %+v %v", a, err)
	}
	if _, err := Parse([]string{"-fx", "img", "dir"}, false); err == nil {
		t.Errorf("-fx accepted")
	}
	a, err = Parse([]string{"--daemon", "img", "dir", "--options=ro"}, false)
	if err != nil || !a.Background || a.Options.Debug || !a.Options.ReadOnly {
		t.Errorf("--daemon --options=ro: %+v %v", a, err)
	}
}
