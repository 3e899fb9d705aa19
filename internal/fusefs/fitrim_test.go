package fusefs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// fstrimScript: fstrim's refusals (a length of zero or below a sector, a
// range that overflows) and its successes, as on kernel btrfs; the bytes
// trimmed differ (the kernel's loop device rounds to its own granularity),
// so only the outcome is printed.
const fstrimScript = `for a in "-o0 -l0" "-o0 -l100" "-o 18446744073709551615 -l1M" "-o 18446744073709551615" "" "-o10M" "-m 1G"; do
  out=$(fstrim -v $a . 2>&1); echo "fstrim $a: rc=$? $(echo "$out" | sed -n 's/.*FITRIM ioctl failed: //p')"
done`

// TestFstrimLikeKernel: fstrim on the mount gives the image file's free
// space back to the host (holes punched), answers as kernel btrfs on a loop
// device does, and leaves every file intact (read back after a new mount,
// btrfs check clean).
func TestFstrimLikeKernel(t *testing.T) {
	if _, err := exec.LookPath("fstrim"); err != nil {
		t.Skip("fstrim (util-linux) not installed")
	}
	testutil.NeedRootLoop(t)
	needFuse(t)
	data := bytes.Repeat([]byte("keep me "), 1<<17) // 1 MiB
	junk := bytes.Repeat([]byte{0xa5}, 64<<20)
	// fill writes a file to keep and a big one, fsyncs, removes the big one
	fill := func(t *testing.T, dir string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "keep"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, "junk"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(junk); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil { // on disk, not only in the page cache
			t.Fatal(err)
		}
		f.Close()
		if err := os.Remove(filepath.Join(dir, "junk")); err != nil {
			t.Fatal(err)
		}
	}
	run := func(t *testing.T, dir string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", fstrimScript)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	allocated := func(img string) int64 {
		var st syscall.Stat_t
		if err := syscall.Stat(img, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}

	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20)
	kdir := testutil.LoopMount(t, kimg, "")
	fill(t, kdir)
	testutil.Run(t, "btrfs", "filesystem", "sync", kdir)
	kbefore := allocated(kimg)
	kout := run(t, kdir)
	kafter := allocated(kimg)
	testutil.Unmount(t, kdir)

	oimg := filepath.Join(t.TempDir(), "ours.img")
	testutil.Mkfs(t, oimg, 256<<20)
	tm := mountImage(t, oimg, Options{})
	fill(t, tm.dir)
	if err := tm.Sync(); err != nil {
		t.Fatal(err)
	}
	obefore := allocated(oimg)
	oout := run(t, tm.dir)
	oafter := allocated(oimg)
	tm.unmount()
	if kout != oout {
		t.Errorf("differs from the kernel's btrfs:\n%s\nkernel's output:\n%s", diffLines(kout, oout), kout)
	}
	t.Logf("image space: kernel %d -> %d KiB, ours %d -> %d KiB", kbefore>>10, kafter>>10, obefore>>10, oafter>>10)
	if kafter < kbefore-int64(len(junk))/2 && oafter > obefore-int64(len(junk))/2 {
		t.Errorf("fstrim gave back %d KiB of the image, the kernel's %d KiB (64 MiB deleted)", (obefore-oafter)>>10, (kbefore-kafter)>>10)
	}
	checktest.Image(t, oimg)
	tm = mountImage(t, oimg, Options{})
	if b, err := os.ReadFile(filepath.Join(tm.dir, "keep")); err != nil || !bytes.Equal(b, data) {
		t.Errorf("file after fstrim and a new mount: %d bytes, %v", len(b), err)
	}
	if out := run(t, tm.dir); !strings.Contains(out, "fstrim : rc=0") {
		t.Errorf("fstrim again: %s", out)
	}
	tm.unmount()
	checktest.Image(t, oimg)
}
