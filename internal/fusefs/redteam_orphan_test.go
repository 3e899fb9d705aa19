package fusefs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestOrphanCrashReplays: crash copies taken right after fsyncs that
// involve orphans replay, with the kernel and with us, to what was
// fsync'd, and check clean before and after the replay:
//   - an O_TMPFILE given a name by linkat, the name fsync'd;
//   - a file renamed over one still open, the new file fsync'd;
//   - an O_TMPFILE fsync'd itself (it must not appear anywhere);
//   - an open file unlinked in a snapshot (committed), another file there
//     fsync'd.
func TestOrphanCrashReplays(t *testing.T) {
	needFuse(t)
	if !testutil.HaveProgs() {
		t.Skip(testutil.ProgsMissing)
	}
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	must(t, os.WriteFile(tm.path("base"), []byte("base"), 0o644))
	must(t, tm.Sync())
	want := map[string]string{"base": "base"}
	gone := []string{}

	// O_TMPFILE + linkat + fsync of the name
	tmp, err := unix.Open(tm.path(), unix.O_TMPFILE|unix.O_RDWR, 0o644)
	must(t, err)
	_, err = unix.Write(tmp, []byte("linked tmpfile"))
	must(t, err)
	must(t, unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", tmp), unix.AT_FDCWD, tm.path("linked"), unix.AT_SYMLINK_FOLLOW))
	want["linked"] = "linked tmpfile"

	// rename over an open file, fsync of the new one
	must(t, os.WriteFile(tm.path("victim"), []byte("old victim"), 0o644))
	must(t, tm.Sync())
	victim, err := os.Open(tm.path("victim"))
	must(t, err)
	must(t, os.WriteFile(tm.path("new"), []byte("new victim"), 0o644))
	must(t, os.Rename(tm.path("new"), tm.path("victim")))
	want["victim"] = "new victim"
	gone = append(gone, "new")

	// an O_TMPFILE fsync'd
	tmp2, err := unix.Open(tm.path(), unix.O_TMPFILE|unix.O_RDWR, 0o644)
	must(t, err)
	_, err = unix.Write(tmp2, bytes.Repeat([]byte("x"), 100000))
	must(t, err)
	must(t, unix.Fsync(tmp2))

	// a snapshot with an open file unlinked in it
	if r := btrfsIoctlAt(tm.dir, btrfsIocSubvolCreate, volArgs(false, 0, 0, "sv")); r != "ok" {
		t.Fatalf("subvolume create: %s", r)
	}
	must(t, os.WriteFile(tm.path("sv", "f"), []byte("in sv"), 0o644))
	src, err := unix.Open(tm.path("sv"), unix.O_RDONLY, 0)
	must(t, err)
	if r := btrfsIoctlAt(tm.dir, btrfsIocSnapCreate, volArgs(false, src, 0, "snap")); r != "ok" {
		t.Fatalf("snapshot: %s", r)
	}
	unix.Close(src)
	inSnap, err := os.Open(tm.path("snap", "f"))
	must(t, err)
	must(t, os.Remove(tm.path("snap", "f")))
	must(t, tm.Sync()) // its ORPHAN_ITEM in the snapshot's tree is on disk
	must(t, os.WriteFile(tm.path("snap", "g"), []byte("g in snap"), 0o644))
	want["sv/f"] = "in sv"
	gone = append(gone, "snap/f")

	// the fsyncs
	for _, p := range []string{"linked", "victim", "snap/g"} {
		f, err := os.OpenFile(tm.path(p), os.O_RDWR, 0)
		must(t, err)
		must(t, f.Sync())
		f.Close()
	}
	want["snap/g"] = "g in snap"
	crash := filepath.Join(t.TempDir(), "crash.img")
	if out, err := exec.Command("cp", "--sparse=always", img, crash).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	unix.Close(tmp)
	unix.Close(tmp2)
	victim.Close()
	inSnap.Close()
	finish(t, tm, img)

	checktest.Image(t, crash)
	if t.Failed() {
		return
	}
	verify := func(who, dir string) {
		t.Helper()
		for p, w := range want {
			if b, err := os.ReadFile(filepath.Join(dir, p)); err != nil || string(b) != w {
				t.Errorf("%s replay: %s = %q, %v; want %q", who, p, b, err, w)
			}
		}
		for _, p := range gone {
			if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
				t.Errorf("%s replay: %s exists", who, p)
			}
		}
		es, err := os.ReadDir(dir)
		must(t, err)
		if len(es) != 5 { // base linked victim sv snap
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			t.Errorf("%s replay: root lists %v", who, names)
		}
	}
	if o := orphanItemsAll(t, crash); len(o) == 0 {
		t.Errorf("crash copy has no ORPHAN_ITEM (the open file unlinked in the snapshot was committed)")
	} else {
		t.Logf("crash copy: %v", o)
		if os.Getenv("RT_DEBUG") != "" {
			out, _ := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "root", crash).CombinedOutput()
			t.Logf("%s", out)
		}
	}
	kcrash := filepath.Join(t.TempDir(), "kcrash.img")
	copyFile(t, crash, kcrash)
	if canKernelMount() {
		dir := testutil.LoopMount(t, kcrash, "")
		verify("kernel", dir)
		testutil.Unmount(t, dir)
		checktest.Image(t, kcrash)
		if o := orphanItemsAll(t, kcrash); len(o) != 0 {
			t.Errorf("after the kernel's replay: ORPHAN_ITEMs %v left", o)
		}
	}
	om := mountImage(t, crash, Options{})
	verify("our", om.dir)
	om.unmount()
	checktest.Image(t, crash)
	if o := orphanItemsAll(t, crash); len(o) != 0 {
		t.Errorf("after our replay: ORPHAN_ITEMs %v left", o)
	}
}

// orphanItemsAll lists the ORPHAN_ITEMs of every tree of img ("tree ino").
func orphanItemsAll(t *testing.T, img string) []string {
	t.Helper()
	out, err := exec.Command("btrfs", "inspect-internal", "dump-tree", img).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-tree %s: %v\n%s", img, err, out)
	}
	var got []string
	tree := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "file tree key") || strings.HasPrefix(l, "fs tree key") {
			tree = l
		}
		if m := orphanItemRE.FindStringSubmatch(l); m != nil {
			got = append(got, tree+": orphan "+m[1])
		}
	}
	return got
}

// TestSnapshotOfOrphanCleaned: a snapshot taken while an unlinked file of
// its source is still open does not keep that orphan (nlink 0, its data
// and its ORPHAN_ITEM), read-only or not: the kernel deletes a new
// snapshot's orphans at once (create_snapshot runs btrfs_orphan_cleanup on
// it; btrfs/058: send of such a snapshot fails with ESTALE). Only the
// source's orphan, still open, remains.
func TestSnapshotOfOrphanCleaned(t *testing.T) {
	needFuse(t)
	if !testutil.HaveProgs() {
		t.Skip(testutil.ProgsMissing)
	}
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	if r := btrfsIoctlAt(tm.dir, btrfsIocSubvolCreate, volArgs(false, 0, 0, "sv")); r != "ok" {
		t.Fatalf("subvolume create: %s", r)
	}
	must(t, os.WriteFile(tm.path("sv", "keep"), []byte("kept"), 0o644))
	must(t, os.WriteFile(tm.path("sv", "gone"), bytes.Repeat([]byte("orphan data "), 100000), 0o644))
	open, err := os.Open(tm.path("sv", "gone"))
	must(t, err)
	defer open.Close()
	must(t, os.Remove(tm.path("sv", "gone")))
	src, err := unix.Open(tm.path("sv"), unix.O_RDONLY, 0)
	must(t, err)
	r1 := btrfsIoctlAt(tm.dir, btrfsIocSnapCreate, volArgs(false, src, 0, "snap"))
	r2 := btrfsIoctlAt(tm.dir, btrfsIocSnapCreateV2, volArgs(true, src, subvolRdonly, "rosnap"))
	unix.Close(src)
	if r1 != "ok" || r2 != "ok" {
		t.Fatalf("snapshot: %s, read-only snapshot: %s", r1, r2)
	}
	must(t, tm.Sync())
	o := orphanItemsAll(t, img)
	if len(o) != 1 || !strings.Contains(o[0], "(256 ROOT_ITEM") {
		t.Errorf("after the snapshots: ORPHAN_ITEMs %v, want only the source's (tree 256)", o)
	}
	for _, s := range []string{"snap", "rosnap"} {
		if b, err := os.ReadFile(tm.path(s, "keep")); err != nil || string(b) != "kept" {
			t.Errorf("%s/keep: %q, %v", s, b, err)
		}
	}
	open.Close()
	finish(t, tm, img)
	if o := orphanItemsAll(t, img); len(o) != 0 {
		t.Errorf("after unmount: ORPHAN_ITEMs %v", o)
	}
}

// TestTmpfileInSubvolume: an O_TMPFILE made in a subvolume gets a name
// there by linkat (as on kernel btrfs; before: EXDEV), and not in another
// subvolume (EXDEV).
func TestTmpfileInSubvolume(t *testing.T) {
	needFuse(t)
	img := newImage(t, 128<<20)
	tm := mountImage(t, img, Options{})
	if r := btrfsIoctlAt(tm.dir, btrfsIocSubvolCreate, volArgs(false, 0, 0, "sv")); r != "ok" {
		t.Fatalf("subvolume create: %s", r)
	}
	tm.unmount() // sv is looked up anew
	tm = mountImage(t, img, Options{})
	fd, err := unix.Open(tm.path("sv"), unix.O_TMPFILE|unix.O_RDWR, 0o644)
	must(t, err)
	_, err = unix.Write(fd, []byte("tmp in sv"))
	must(t, err)
	proc := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, tm.path("top"), unix.AT_SYMLINK_FOLLOW); err != unix.EXDEV {
		t.Errorf("linkat of a tmpfile of sv into the top subvolume: %v, want EXDEV", err)
	}
	if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, tm.path("sv", "named"), unix.AT_SYMLINK_FOLLOW); err != nil {
		t.Errorf("linkat of a tmpfile of sv into sv: %v\n%s", err, tm.logBuf.String())
	}
	unix.Close(fd)
	if b, err := os.ReadFile(tm.path("sv", "named")); err == nil && string(b) != "tmp in sv" {
		t.Errorf("sv/named reads %q", b)
	}
	finish(t, tm, img)
}
