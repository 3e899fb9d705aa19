package fusefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
)

// TestJoinChecksTheImage: a second mount of image A joins the daemon
// found at A's first mount point only when that daemon serves A. Here
// another image B was mounted over that directory: the join must refuse
// (before, it bind-mounted B's filesystem and reported A mounted). A hard
// link to A names the same image and finds its mount.
func TestJoinChecksTheImage(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("a second mount (bind mount) needs root")
	}
	imgA, imgB := newImage(t, 128<<20), newImage(t, 128<<20)
	a := mountImage(t, imgA, Options{})
	must(t, os.WriteFile(a.path("marker"), []byte("A"), 0o644))
	hard := filepath.Join(t.TempDir(), "hard.img")
	must(t, os.Link(imgA, hard))
	if h, w := blockdev.Probe(hard); !w || h.MountDir != a.dir {
		t.Errorf("probe of a hard link to the mounted image: writer %v, mount dir %q; want %q", w, h.MountDir, a.dir)
	}
	second := t.TempDir()
	if err := Join(hard, a.dir, second, Options{}); err != nil {
		t.Errorf("join through a hard link: %v", err)
	} else {
		if b, err := os.ReadFile(filepath.Join(second, "marker")); err != nil || string(b) != "A" {
			t.Errorf("joined mount reads marker %q, %v; want A", b, err)
		}
		must(t, unix.Unmount(second, 0))
	}

	b, err := New(imgB, a.dir, Options{}) // over A's mount point
	if err != nil {
		t.Fatalf("mount B over A: %v", err)
	}
	bm := &testMount{Mount: b, t: t, dir: a.dir, logBuf: &syncBuf{}}
	t.Cleanup(func() { bm.unmount() })
	must(t, os.WriteFile(bm.path("marker"), []byte("B"), 0o644))
	h, w := blockdev.Probe(imgA)
	if !w || h.MountDir != a.dir {
		t.Fatalf("probe of A under B: writer %v, mount dir %q; want %q", w, h.MountDir, a.dir)
	}
	err = Join(imgA, h.MountDir, second, Options{})
	if err == nil {
		got, _ := os.ReadFile(filepath.Join(second, "marker"))
		unix.Unmount(second, 0)
		t.Fatalf("second mount of A while B is mounted over A's mount point: joined, marker reads %q", got)
	}
	if !strings.Contains(err.Error(), "another filesystem") {
		t.Errorf("join refused without saying why: %v", err)
	}
	t.Logf("refused: %v", err)
	bm.unmount()
}

// TestJoinSkipsDeadMount: the first mount of an image died (its FUSE
// connection aborted, as when its daemon is killed; the dead mount point
// stays listed until unmounted) and the image was mounted again
// elsewhere. A second mount joins the live one, not the dead one (before:
// it asked the dead one, then waited 10 s for the image and failed).
func TestJoinSkipsDeadMount(t *testing.T) {
	needFuse(t)
	if os.Geteuid() != 0 {
		t.Skip("a second mount (bind mount) needs root")
	}
	img := newImage(t, 128<<20)
	dead := mountImage(t, img, Options{})
	must(t, os.WriteFile(dead.path("marker"), []byte("A"), 0o644))
	must(t, dead.Sync())
	abortConnection(dead.dir)
	dead.Wait()
	must(t, dead.Close())
	dead.done = true
	t.Cleanup(func() { unix.Unmount(dead.dir, unix.MNT_DETACH) })
	live := mountImage(t, img, Options{})
	h, w := blockdev.Probe(img)
	if !w || h.MountDir != live.dir {
		t.Errorf("probe: writer %v, mount dir %q; want the live mount %q (the dead one is %q)", w, h.MountDir, live.dir, dead.dir)
	}
	live.unmount()
}
