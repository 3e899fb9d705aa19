package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// clitoolsRun runs the gobtrfs command line args in this process and returns
// stdout, stderr and the exit status.
func clitoolsRun(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	rc := run(args, &out, &errb)
	return out.String(), errb.String(), rc
}

// progsOut runs a btrfs-progs command and returns its stdout.
func progsOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("btrfs", args...).Output()
	if err != nil {
		t.Fatalf("btrfs %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestSubvolumeLikeProgs makes subvolumes and snapshots with gobtrfs and
// compares gobtrfs subvolume list/show/get-default on the image with
// btrfs-progs on a kernel mount of its top level; set-default is what the
// kernel then mounts.
func TestSubvolumeLikeProgs(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := filepath.Join(t.TempDir(), "sv.img")
	testutil.Mkfs(t, img, 256<<20)
	for _, a := range [][]string{
		{"subvolume", "create", img, "/sv"},
		{"mkdir", img, "/d"},
		{"subvolume", "create", img, "/d/nest"},
		{"subvolume", "snapshot", "-r", img, "/sv", "/sv/ro"},
		{"sub", "snap", img, "/sv", "/snap"},
		{"subvolume", "set-default", img, "/snap"},
	} {
		if _, errs, rc := clitoolsRun(a...); rc != 0 {
			t.Fatalf("gobtrfs %s: exit %d: %s", strings.Join(a, " "), rc, errs)
		}
	}
	testutil.CheckImage(t, img)
	if sb := progsOut(t, "inspect-internal", "dump-super", img); !strings.Contains(sb, "DEFAULT_SUBVOL") {
		t.Errorf("set-default did not set the DEFAULT_SUBVOL incompat flag:\n%s", sb)
	}
	// the default entry names the snapshot's ROOT_ITEM key, offset (its
	// creation transaction) included, as the kernel's ioctl writes it
	root := progsOut(t, "inspect-internal", "dump-tree", "-t", "root", img)
	rootKey := regexp.MustCompile(`key \((259 ROOT_ITEM \d+)\) itemoff`).FindStringSubmatch(root)
	if rootKey == nil || rootKey[1] == "259 ROOT_ITEM 0" || !strings.Contains(root, "location key ("+rootKey[1]+") type DIR\n\t\ttransid 0 data_len 0 name_len 7\n\t\tname: default") {
		t.Errorf("the default entry does not name the snapshot's ROOT_ITEM key %v:\n%s", rootKey, root)
	}
	type view struct{ list, show, getDefault map[string]string }
	flagSets := []string{"", "-p", "-a", "-o", "-r", "-s", "-u", "-p -u -q -R -c", "-a -p", "-t", "-t -s -p -u"}
	ours := view{map[string]string{}, map[string]string{}, map[string]string{}}
	for _, fl := range flagSets {
		args := append(append([]string{"subvolume", "list"}, strings.Fields(fl)...), img)
		out, errs, rc := clitoolsRun(args...)
		if rc != 0 {
			t.Fatalf("gobtrfs %s: exit %d: %s", strings.Join(args, " "), rc, errs)
		}
		ours.list[fl] = out
	}
	for _, p := range []string{"/", "/sv", "/sv/ro", "/d/nest"} {
		out, errs, rc := clitoolsRun("subvolume", "show", img, p)
		if rc != 0 {
			t.Fatalf("gobtrfs subvolume show %s: exit %d: %s", p, rc, errs)
		}
		ours.show[p] = out
	}
	ours.getDefault[""], _, _ = clitoolsRun("subvolume", "get-default", img)

	mnt := testutil.LoopMount(t, img, "ro,subvolid=5")
	for _, fl := range flagSets {
		want := progsOut(t, append(append([]string{"subvolume", "list"}, strings.Fields(fl)...), mnt)...)
		if ours.list[fl] != want {
			t.Errorf("subvolume list %s:\n gobtrfs:\n%s btrfs-progs:\n%s", fl, ours.list[fl], want)
		}
	}
	for p, got := range ours.show {
		want := progsOut(t, "subvolume", "show", filepath.Join(mnt, p))
		if p == "/" {
			want = strings.Replace(want, mnt+"\n", "/\n", 1)
		}
		if got != want {
			t.Errorf("subvolume show %s:\n gobtrfs:\n%s btrfs-progs:\n%s", p, got, want)
		}
	}
	if want := progsOut(t, "subvolume", "get-default", mnt); ours.getDefault[""] != want {
		t.Errorf("get-default: gobtrfs %q, btrfs-progs %q", ours.getDefault[""], want)
	}
	testutil.Unmount(t, mnt)
	// a mount without subvol= mounts the default: the snapshot of /sv (259: made after sv, nest and ro)
	mnt = testutil.LoopMount(t, img, "ro")
	if got := progsOut(t, "inspect-internal", "rootid", mnt); strings.TrimSpace(got) != "259" {
		t.Errorf("the kernel mounts subvolume %s by default, want 259 (/snap)", got)
	}
	testutil.Unmount(t, mnt)

	if _, _, rc := clitoolsRun("subvolume", "set-default", "0", img); rc != 0 {
		t.Fatal("set-default 0 IMAGE (btrfs-progs' order) failed")
	}
	if out, _, _ := clitoolsRun("subvolume", "get-default", img); out != "ID 5 (FS_TREE)\n" {
		t.Errorf("after set-default 0: get-default %q", out)
	}
	testutil.CheckImage(t, img)
}
