package treelog_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestFsyncDirKeptState fsyncs a directory of a few hundred committed
// entries after every one of a random sequence of creates, unlinks,
// renames (within it, out of it, into it) and hard links, as bonnie++ -b
// does: each fsync classifies only the entries changed since the last
// (writedirs.go), and in this package's tests each such classification is
// checked against one from scratch (the fsync fails if they differ).
// Commits in between start new states. At the end the power is cut:
// btrfs-progs must print the log tree, our replay and the kernel's must
// show the directory as it is, btrfs check clean.
func TestFsyncDirKeptState(t *testing.T) {
	testutil.NeedProgs(t)
	seed := testutil.Seed(t, *seedFlag)
	r := rand.New(rand.NewSource(seed))
	img, f, _ := newLoggedImage(t)
	d := lookupPath(t, f, "d")
	e := lookupPath(t, f, "e")
	names := map[string]bool{"a": true, "h": true}
	for i := 0; i < 400; i++ {
		n := fmt.Sprintf("committed-entry-%04d", i)
		create(t, f, d, n, nil)
		names[n] = true
	}
	mustT(t, f.Commit())
	pick := func() string {
		var ns []string
		for n := range names {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		return ns[r.Intn(len(ns))]
	}
	var outside []string // names moved to e
	next := 0
	for s := 0; s < 300; s++ {
		switch op := r.Intn(10); {
		case op < 3:
			n := pick()
			mustT(t, f.Unlink(d, n))
			delete(names, n)
		case op < 6:
			n := fmt.Sprintf("new-%d", next)
			next++
			create(t, f, d, n, []byte(n))
			names[n] = true
		case op == 6:
			n, m := pick(), fmt.Sprintf("renamed-%d", next)
			next++
			mustT(t, f.Rename(d, n, d, m, 0))
			delete(names, n)
			names[m] = true
		case op == 7:
			n := pick()
			m := fmt.Sprintf("out-%d", next)
			next++
			mustT(t, f.Rename(d, n, e, m, 0))
			delete(names, n)
			outside = append(outside, m)
		case op == 8 && len(outside) > 0:
			m := outside[len(outside)-1]
			outside = outside[:len(outside)-1]
			mustT(t, f.Rename(e, m, d, "back-"+m, 0))
			names["back-"+m] = true
		default:
			n := pick()
			id, _, err := f.Lookup(d, n)
			mustT(t, err)
			m := fmt.Sprintf("link-%d", next)
			next++
			mustT(t, f.Link(id, d, m))
			names[m] = true
		}
		mustT(t, f.Fsync(d))
		if s == 100 || s == 200 {
			mustT(t, f.Commit())
		}
	}
	st := f.FsyncStats()
	t.Logf("seed %d: fsync stats %+v", seed, st)
	if st.Logged < 250 {
		t.Fatalf("only %d of 300 directory fsyncs used the log: %+v", st.Logged, st)
	}
	crash := copyFile(t, img)
	testutil.CheckImage(t, crash, "--check-data-csum")
	// btrfs-progs prints the log trees with the rest
	out, err := exec.Command("btrfs", "inspect-internal", "dump-tree", crash).CombinedOutput()
	if err != nil || bytes.Contains(bytes.ToLower(out), []byte("error")) || !bytes.Contains(out, []byte("DIR_LOG_INDEX")) {
		t.Fatalf("btrfs inspect-internal dump-tree of the log: %v\n%.2000s", err, out)
	}
	ours := fsopsView(t, copyFile(t, crash))
	var got []string
	for p := range ours {
		if n, ok := strings.CutPrefix(p, "d/"); ok {
			got = append(got, n)
		}
	}
	sort.Strings(got)
	var want []string
	for n := range names {
		want = append(want, n)
	}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("our replay: d holds %d names, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	if testutil.HaveRootLoop() {
		kern := kernelTree(t, crash)
		if d := testutil.DiffMaps(kern, ours); len(d) > 0 {
			t.Fatalf("our replay differs from the kernel's:\n%s", strings.Join(d, "\n"))
		}
		testutil.CheckImage(t, crash, "--check-data-csum")
	}
}
