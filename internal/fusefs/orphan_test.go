package fusefs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

var (
	orphanItemRE = regexp.MustCompile(`key \(ORPHAN ORPHAN_ITEM (\d+)\)`)
	inodeItemRE  = regexp.MustCompile(`key \((\d+) INODE_ITEM 0\)`)
)

// fsTreeItems returns, from btrfs-progs' dump of img's FS tree, the inode
// numbers of its ORPHAN_ITEMs and of its INODE_ITEMs.
func fsTreeItems(t *testing.T, img string) (orphans []string, inodes map[string]bool) {
	t.Helper()
	out, err := exec.Command("btrfs", "inspect-internal", "dump-tree", "-t", "fs", img).CombinedOutput()
	if err != nil {
		t.Fatalf("dump-tree -t fs %s: %v\n%s", img, err, out)
	}
	for _, m := range orphanItemRE.FindAllStringSubmatch(string(out), -1) {
		orphans = append(orphans, m[1])
	}
	sort.Strings(orphans)
	inodes = map[string]bool{}
	for _, m := range inodeItemRE.FindAllStringSubmatch(string(out), -1) {
		inodes[m[1]] = true
	}
	return orphans, inodes
}

// wantOrphansGone fails unless img has no ORPHAN_ITEM left and none of the
// inodes orphans named.
func wantOrphansGone(t *testing.T, img, when string, orphans []string) {
	t.Helper()
	o, inodes := fsTreeItems(t, img)
	if len(o) != 0 {
		t.Errorf("%s: ORPHAN_ITEMs %v left", when, o)
		return
	}
	for _, ino := range orphans {
		if inodes[ino] {
			t.Errorf("%s: orphan inode %s still there", when, ino)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	must(t, err)
	must(t, os.WriteFile(to, b, 0o644))
}

// TestOrphansLikeKernel: files and a directory still open when their last
// name goes, and an O_TMPFILE, are kept as the kernel keeps them: nlink 0
// and an ORPHAN_ITEM, with no name anywhere (no hidden directory). After a
// crash both the kernel's read-write mount and ours delete them; a clean
// unmount leaves none.
func TestOrphansLikeKernel(t *testing.T) {
	needFuse(t)
	if !testutil.HaveProgs() {
		t.Skip(testutil.ProgsMissing)
	}
	img := newImage(t, 256<<20)
	tm := mountImage(t, img, Options{})
	must(t, os.WriteFile(tm.path("keep"), []byte("kept"), 0o644))
	big := bytes.Repeat([]byte("orphan data "), 100000)
	gone, err := os.Create(tm.path("gone"))
	must(t, err)
	defer gone.Close()
	_, err = gone.Write(big)
	must(t, err)
	must(t, os.Remove(tm.path("gone")))
	must(t, os.Mkdir(tm.path("d"), 0o755))
	d, err := os.Open(tm.path("d"))
	must(t, err)
	defer d.Close()
	must(t, os.Remove(tm.path("d")))
	tmp, err := unix.Open(tm.path(), unix.O_TMPFILE|unix.O_RDWR, 0o600)
	must(t, err)
	defer unix.Close(tmp)
	_, err = unix.Write(tmp, []byte("tmp data"))
	must(t, err)
	must(t, os.WriteFile(tm.path("victim"), []byte("old"), 0o644))
	victim, err := os.Open(tm.path("victim"))
	must(t, err)
	defer victim.Close()
	must(t, os.WriteFile(tm.path("new"), []byte("new"), 0o644))
	must(t, os.Rename(tm.path("new"), tm.path("victim")))

	for name, fd := range map[string]int{"unlinked file": int(gone.Fd()), "removed directory": int(d.Fd()),
		"O_TMPFILE": tmp, "renamed-over file": int(victim.Fd())} {
		var st unix.Stat_t
		must(t, unix.Fstat(fd, &st))
		if st.Nlink != 0 {
			t.Errorf("%s: nlink %d, want 0", name, st.Nlink)
		}
	}
	got := make([]byte, 3)
	if _, err := victim.ReadAt(got, 0); err != nil || string(got) != "old" {
		t.Errorf("renamed-over open file reads %q, %v; want its old data", got, err)
	}
	if b, err := os.ReadFile(tm.path("victim")); err != nil || string(b) != "new" {
		t.Errorf("victim now reads %q, %v; want the new file", b, err)
	}
	must(t, tm.Sync()) // the orphans are committed

	crash := filepath.Join(t.TempDir(), "crash.img")
	copyFile(t, img, crash)
	checktest.Image(t, crash)
	orphans, inodes := fsTreeItems(t, crash)
	if len(orphans) != 4 {
		t.Fatalf("crash image has ORPHAN_ITEMs for inodes %v, want 4 (file, directory, O_TMPFILE, renamed-over file)", orphans)
	}
	for _, ino := range orphans {
		if !inodes[ino] {
			t.Errorf("crash image: ORPHAN_ITEM %s without its inode", ino)
		}
	}
	es, err := os.ReadDir(tm.path())
	must(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "keep victim" {
		t.Errorf("root lists %v, want [keep victim]", names)
	}

	// A clean unmount deletes them.
	gone.Close()
	d.Close()
	unix.Close(tmp)
	victim.Close()
	finish(t, tm, img)
	wantOrphansGone(t, img, "after unmount", orphans)

	// After the crash, our read-write mount deletes them.
	ours := filepath.Join(t.TempDir(), "ours.img")
	copyFile(t, crash, ours)
	om := mountImage(t, ours, Options{})
	if !strings.Contains(om.logBuf.String(), "deleted 4 orphan") {
		t.Errorf("our mount after the crash logged %q, want it to say it deleted 4 orphans", om.logBuf.String())
	}
	finish(t, om, ours)
	wantOrphansGone(t, ours, "ours after the crash", orphans)

	// And so does the kernel's.
	if !canKernelMount() {
		t.Skip("not root with loop devices and btrfs: no kernel mount of the crash image")
	}
	kdir := testutil.LoopMount(t, crash, "")
	kes, err := os.ReadDir(kdir)
	must(t, err)
	var knames []string
	for _, e := range kes {
		knames = append(knames, e.Name())
	}
	testutil.Unmount(t, kdir)
	if strings.Join(knames, " ") != "keep victim" {
		t.Errorf("kernel lists %v in the crash image's root, want [keep victim]", knames)
	}
	checktest.Image(t, crash)
	wantOrphansGone(t, crash, "kernel after the crash", orphans)
}
