package mountcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// joinScript runs on four mounts of one filesystem: M1 the first, M2 a
// second one, M3 a read-only one, M4 one of subvolume sv. Renames through
// one mount are seen through the other (generic/732), data written
// through one is read through the other before any writeback (one page
// cache), M3 refuses writes, M4 shows sv.
const joinScript = `mkdir $M1/A $M1/B; touch $M1/A/f; mv $M1/A/f $M1/B/; cat $M2/B/f; mv $M2/B/f $M2/A/; cat $M1/A/f; mv $M1/A/f $M1/B/; ls $M1/B; ls $M2/A
echo data > $M1/w; cat $M2/w; echo more >> $M2/w; cat $M1/w
touch $M3/x 2>&1 | sed 's/.*: //'; ls $M3/B
echo s > $M1/sv/g; cat $M4/g; ls $M4`

// joinAfter runs once M1 is unmounted: the other mounts stay.
const joinAfter = `cat $M2/w; ls $M4; cat $M3/sv/g`

// TestSecondMountLikeKernel: a second `gobtrfs mount` of a mounted image
// (plain, -o ro, -o subvol=) is the same filesystem, as a second kernel
// mount of a btrfs device is: compared with kernel btrfs mounting one loop
// device four times.
func TestSecondMountLikeKernel(t *testing.T) {
	testutil.NeedRootLoop(t)
	needFuse(t)
	bin := gobtrfsBin(t)
	// one image with subvolume sv, copied for our side
	kimg := filepath.Join(t.TempDir(), "kernel.img")
	testutil.Mkfs(t, kimg, 256<<20)
	d := testutil.LoopMount(t, kimg, "")
	testutil.Run(t, "btrfs", "-q", "subvolume", "create", filepath.Join(d, "sv"))
	testutil.Unmount(t, d)
	checktest.Image(t, kimg)
	oimg := filepath.Join(t.TempDir(), "ours.img")
	testutil.Run(t, "cp", "--sparse=always", kimg, oimg)

	sh := func(t *testing.T, env []string, script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(append(os.Environ(), "LC_ALL=C"), env...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	envOf := func(dirs []string) []string {
		var env []string
		for i, d := range dirs {
			env = append(env, "M"+string(rune('1'+i))+"="+d)
		}
		return env
	}

	// kernel: one loop device mounted four times
	dev := testutil.Loop(t, kimg)
	kdirs := []string{testutil.Mount(t, dev, ""), testutil.Mount(t, dev, ""), testutil.Mount(t, dev, "ro"), testutil.Mount(t, dev, "subvol=sv")}
	kout := sh(t, envOf(kdirs), joinScript)
	knosuch := exec.Command("mount", "-t", "btrfs", "-o", "subvol=nosuch", dev, t.TempDir()).Run() != nil
	testutil.Unmount(t, kdirs[0])
	kout += sh(t, envOf(kdirs), joinAfter)
	for _, d := range kdirs[1:] {
		testutil.Unmount(t, d)
	}

	// ours: a daemon, then three more `gobtrfs mount`s of its image
	var odirs []string
	for i := 0; i < 5; i++ {
		odirs = append(odirs, filepath.Join(t.TempDir(), "m"))
		if err := os.Mkdir(odirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range odirs {
			if mounted(d) {
				exec.Command("umount", "-l", d).Run()
			}
		}
	})
	mount := func(dir string, opts ...string) error {
		out, err := exec.Command(bin, append(append([]string{"mount", "--daemon"}, opts...), oimg, dir)...).CombinedOutput()
		if err != nil {
			t.Logf("gobtrfs mount %v %s: %v\n%s", opts, dir, err, out)
		}
		return err
	}
	if err := mount(odirs[0]); err != nil {
		t.Fatal(err)
	}
	for i, opts := range [][]string{nil, {"-o", "ro"}, {"-o", "subvol=sv"}} {
		if err := mount(odirs[i+1], opts...); err != nil {
			t.Fatal(err)
		}
	}
	oout := sh(t, envOf(odirs[:4]), joinScript)
	out, err := exec.Command(bin, "mount", "-o", "subvol=nosuch", oimg, odirs[4]).CombinedOutput()
	if onosuch := err != nil; onosuch != knosuch {
		t.Errorf("mount -o subvol=nosuch of a mounted image: refused %v, on the kernel %v (%s)", onosuch, knosuch, out)
	} else if !strings.Contains(string(out), "nosuch") {
		t.Errorf("mount -o subvol=nosuch: the error does not name the subvolume: %s", out)
	}
	unmountDir(t, odirs[0])
	oout += sh(t, envOf(odirs[:4]), joinAfter)
	if kout != oout {
		t.Errorf("differs from the kernel's btrfs:\n%s\nkernel's output:\n%s", diffLines(kout, oout), kout)
	}
	for _, d := range odirs[1:4] {
		unmountDir(t, d)
	}
	waitFor(t, "the daemon to let go of the image", func() bool { return unlocked(oimg) })
	checktest.Image(t, oimg)
}

// diffLines shows the lines where want and got differ.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var x, y string
		if i < len(w) {
			x = w[i]
		}
		if i < len(g) {
			y = g[i]
		}
		if x != y {
			b.WriteString("  kernel: " + x + "\n  ours:   " + y + "\n")
		}
	}
	return b.String()
}
