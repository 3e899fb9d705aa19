package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testimg/multidev"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// fsTestImages makes the images filesystem df/usage are compared on: one
// by mkfs.btrfs --rootdir, one with mixed block groups (--mixed), one by
// gobtrfs mkfs and put.
func fsTestImages(t *testing.T) map[string]string {
	t.Helper()
	testutil.NeedProgs(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	for i := 0; i < 40; i++ {
		os.WriteFile(filepath.Join(src, "sub", "f"+string(rune('a'+i%26))+string(rune('a'+i/26))),
			bytes.Repeat([]byte{byte(i)}, 3000*i), 0o644)
	}
	os.WriteFile(filepath.Join(src, "big"), bytes.Repeat([]byte("0123456789"), 3<<20/10), 0o644)
	imgs := map[string]string{"progs": filepath.Join(dir, "progs.img"), "gobtrfs": filepath.Join(dir, "ours.img"),
		"mixed": filepath.Join(dir, "mixed.img")}
	testutil.MkfsRootdir(t, src, imgs["progs"], 300<<20)
	testutil.MkfsRootdir(t, src, imgs["mixed"], 200<<20, "--mixed")
	for _, a := range [][]string{{"mkfs", "-q", "-b", "320M", imgs["gobtrfs"]}, {"put", imgs["gobtrfs"], src, "/"}} {
		if _, errs, rc := clitoolsRun(a...); rc != 0 {
			t.Fatalf("gobtrfs %s: exit %d: %s", strings.Join(a, " "), rc, errs)
		}
	}
	testutil.CheckImage(t, imgs["gobtrfs"])
	return imgs
}

// TestFilesystemLikeProgs compares gobtrfs filesystem df and usage on an
// image with btrfs filesystem df and usage on a kernel mount of it (the
// loop device's name replaced by the image's path), and show with btrfs
// filesystem show of the unmounted image.
func TestFilesystemLikeProgs(t *testing.T) {
	testutil.NeedRootLoop(t)
	for name, img := range fsTestImages(t) {
		t.Run(name, func(t *testing.T) {
			cmds := [][]string{{"df", "-b"}, {"df"}, {"usage", "-b"}, {"usage"}, {"df", "-k"}, {"usage", "--si"}, {"usage", "-T"}}
			ours := map[string]string{}
			for _, c := range cmds {
				out, errs, rc := clitoolsRun(append(append([]string{"filesystem"}, c...), img)...)
				if rc != 0 {
					t.Fatalf("gobtrfs filesystem %v: exit %d: %s", c, rc, errs)
				}
				ours[strings.Join(c, " ")] = out
			}
			show, _, _ := clitoolsRun("filesystem", "show", "--raw", img)
			if want := progsOut(t, "filesystem", "show", "--raw", img); show != want {
				t.Errorf("filesystem show --raw:\n gobtrfs:\n%s btrfs-progs:\n%s", show, want)
			}
			mnt := testutil.LoopMount(t, img, "ro")
			src, err := exec.Command("findmnt", "-no", "SOURCE", mnt).Output()
			if err != nil {
				t.Fatal(err)
			}
			loop := strings.TrimSpace(string(src))
			alias := sameLengthAlias(t, img, len(loop))
			for _, c := range cmds {
				want := progsOut(t, append(append([]string{"filesystem"}, c...), mnt)...)
				want = strings.ReplaceAll(want, loop+"\t", img+"\t")
				got := ours[strings.Join(c, " ")]
				if c[len(c)-1] == "-T" {
					// the table's path column is as wide as the path: read
					// the image through a name as long as the loop device's
					want = strings.ReplaceAll(want, loop+" ", alias+" ")
					got, _, _ = clitoolsRun(append(append([]string{"filesystem"}, c...), alias)...)
				}
				if got != want {
					t.Errorf("filesystem %s:\n gobtrfs:\n%s btrfs-progs on the mount:\n%s", strings.Join(c, " "), got, want)
				}
			}
			testutil.Unmount(t, mnt)
		})
	}
}

// sameLengthAlias is a symlink to img whose path has n bytes (n >= 10).
func sameLengthAlias(t *testing.T, img string, n int) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		p := fmt.Sprintf("/tmp/%0*d", n-5, (os.Getpid()*1000+i)%int(math.Pow10(n-5)))
		if err := os.Symlink(img, p); err == nil {
			t.Cleanup(func() { os.Remove(p) })
			return p
		}
	}
	t.Fatalf("no free name of %d bytes in /tmp", n)
	return ""
}

// TestFilesystemLabel sets the label of an image and reads it with
// btrfs-progs (filesystem label, dump-super: every copy).
func TestFilesystemLabel(t *testing.T) {
	testutil.NeedProgs(t)
	img := filepath.Join(t.TempDir(), "l.img")
	testutil.Mkfs(t, img, 128<<20, "-L", "before")
	if out, _, rc := clitoolsRun("filesystem", "label", img); rc != 0 || out != "before\n" {
		t.Fatalf("label: exit %d, %q", rc, out)
	}
	if _, errs, rc := clitoolsRun("filesystem", "label", img, "after it"); rc != 0 {
		t.Fatalf("set label: exit %d: %s", rc, errs)
	}
	if got := progsOut(t, "filesystem", "label", img); got != "after it\n" {
		t.Errorf("btrfs filesystem label reads %q after gobtrfs set it to \"after it\"", got)
	}
	all := progsOut(t, "inspect-internal", "dump-super", "-a", img)
	if n := strings.Count(all, "label\t\t\tafter it\n"); n != 2 { // a 128 MiB image holds the primary and the 64 MiB copy
		t.Errorf("%d superblock copies have the new label, want 2:\n%s", n, all)
	}
	testutil.CheckImage(t, img)
	if _, errs, rc := clitoolsRun("filesystem", "label", img, strings.Repeat("x", 256)); rc != 2 || !strings.Contains(errs, "too long") {
		t.Errorf("a 256-byte label: exit %d, %q; want a usage error", rc, errs)
	}
}

// TestFilesystemLikeProgsRAID1: df and usage of a kernel-made two-device
// RAID1 filesystem (per-device lines, RAID1 ratios, the statfs estimate of
// two-copy chunks) agree with btrfs-progs on a mount of both devices.
func TestFilesystemLikeProgsRAID1(t *testing.T) {
	k := multidev.Make(t, t.TempDir(), multidev.Spec{Devices: 2, Data: "raid1", Meta: "raid1", Size: 200 << 20})
	cmds := [][]string{{"df", "-b"}, {"usage", "-b"}, {"usage"}}
	opts := "ro"
	for _, l := range k.Loops[1:] {
		opts += ",device=" + l
	}
	mnt := testutil.Mount(t, k.Loops[0], opts)
	want := map[string]string{}
	for _, c := range cmds {
		out := progsOut(t, append(append([]string{"filesystem"}, c...), mnt)...)
		for i, l := range k.Loops {
			out = strings.ReplaceAll(out, l+"\t", k.Images[i]+"\t")
		}
		want[strings.Join(c, " ")] = out
	}
	testutil.Unmount(t, mnt)
	if err := k.Detach(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cmds {
		got, errs, rc := clitoolsRun(append(append([]string{"filesystem"}, c...), k.Images...)...)
		if rc != 0 {
			t.Fatalf("gobtrfs filesystem %v: exit %d: %s", c, rc, errs)
		}
		if w := want[strings.Join(c, " ")]; got != w {
			t.Errorf("filesystem %s:\n gobtrfs:\n%s btrfs-progs on the mount:\n%s", strings.Join(c, " "), got, w)
		}
	}
}
