package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestKernelImage builds an image with the kernel (scripts/mkimages.sh:
// compression, snapshots, reflinks, prealloc, holes, NODATACOW, 5000-entry
// directory, nested subvolumes, a default subvolume) and uses the kernel's
// read-only mount as the oracle for restore, ls, cat, SEEK_DATA/SEEK_HOLE
// and the subvolume list.
func TestKernelImage(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := filepath.Join(t.TempDir(), "kernel.img")
	t.Log(strings.TrimSpace(testimg.MakeKernelImages(t, img)))
	dev := testutil.Loop(t, img)
	top := testutil.Mount(t, dev, "ro,subvolid=5")
	def := testutil.Mount(t, dev, "ro")

	// the kernel shows a snapshot's link to a nested subvolume it did not
	// include as an empty inode-2 directory stamped with the current time
	placeholder := func(rel string, st *unix.Stat_t) bool { return st.Ino == 2 }

	t.Run("restore", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "out")
		out, err := rdRunRestore(t, "-q", "--devices", "--keep-setuid", img, dest)
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, out)
		}
		if out != "" {
			t.Logf("restore said:\n%s", out)
		}
		diffs := testimg.Compare(top, dest, testimg.CompareOptions{Atime: true, SkipTimes: placeholder})
		if len(diffs) > 0 {
			t.Fatalf("restore differs from the kernel's view:\n%s", strings.Join(diffs, "\n"))
		}
	})

	t.Run("ls", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			mnt  string
		}{{nil, def}, {[]string{"--subvol", "5"}, top}, {[]string{"--subvol", "sv1/snap-of-zstd"}, filepath.Join(def, "snap-of-zstd")}} {
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"-l", "-R", "-i"}, c.args...), img)
			if err := lsMain(args, &stdout, &stderr); err != nil {
				t.Fatalf("ls %v: %v\n%s", args, err, stderr.String())
			}
			want := rdKernelListing(t, c.mnt)
			got := rdNormalizePlaceholders(stdout.String())
			if got != want {
				t.Fatalf("ls %v differs from the kernel's view:\n%s", c.args, rdLineDiff(want, got))
			}
			t.Logf("ls %v: %d lines match", c.args, strings.Count(got, "\n"))
		}
	})

	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{SubvolID: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()

	t.Run("seek", func(t *testing.T) {
		n := 0
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			rel, _ := filepath.Rel(top, p)
			want, err := rdKernelSegments(p)
			if err != nil {
				t.Fatalf("%s: kernel lseek: %v", rel, err)
			}
			f, err := fsys.OpenFile(rel)
			if err != nil {
				t.Fatal(err)
			}
			got := rdOurSegments(f)
			f.Close()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: data segments %v, kernel %v", rel, got, want)
			}
			n++
			return nil
		})
		t.Logf("%d files: SEEK_DATA/SEEK_HOLE agree with the kernel", n)
	})

	t.Run("cat", func(t *testing.T) {
		for _, rel := range []string{"zstd/overwritten", "lzo/mixed", "zlib/inline-3000", "plain/sparse",
			"plain/punched", "plain/prealloc-keep", "plain/nocow", "snap-rw/file", "sv1/file", "zstd/grown"} {
			var stdout, stderr bytes.Buffer
			if err := catMain([]string{"--subvol", "5", img, rel}, &stdout, &stderr); err != nil {
				t.Fatalf("cat %s: %v\n%s", rel, err, stderr.String())
			}
			want, _ := os.ReadFile(filepath.Join(top, rel))
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("cat %s: %d bytes differ from the kernel's %d", rel, stdout.Len(), len(want))
			}
		}
	})

	t.Run("subvolumes", func(t *testing.T) {
		subs, err := fsys.Subvolumes()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range subs {
			if s.ID != 5 {
				got = append(got, fmt.Sprintf("%d %d %s ro=%v", s.ID, s.ParentID, s.Path, s.ReadOnly))
			}
		}
		out, err := exec.Command("btrfs", "subvolume", "list", "-p", top).CombinedOutput()
		if err != nil {
			t.Fatalf("btrfs subvolume list: %v\n%s", err, out)
		}
		ro, _ := exec.Command("btrfs", "subvolume", "list", "-r", top).CombinedOutput()
		re := regexp.MustCompile(`ID (\d+) gen \d+ parent (\d+) top level \d+ path (.*)`)
		var want []string
		for _, m := range re.FindAllStringSubmatch(string(out), -1) {
			isRO := regexp.MustCompile(`ID ` + m[1] + ` gen`).Match(ro)
			want = append(want, fmt.Sprintf("%s %s %s ro=%v", m[1], m[2], m[3], isRO))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("subvolumes:\n%s\nbtrfs subvolume list:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		defOut, _ := exec.Command("btrfs", "subvolume", "get-default", top).CombinedOutput()
		id, err := fsys.DefaultSubvolume()
		if err != nil || !strings.HasPrefix(string(defOut), fmt.Sprintf("ID %d ", id)) {
			t.Fatalf("default subvolume %d %v, btrfs says %s", id, err, defOut)
		}
		t.Logf("%d subvolumes agree; default %d", len(got), id)
	})
}

// rdKernelListing formats a kernel mount the way `gobtrfs ls -l -R -i` does.
func rdKernelListing(t *testing.T, root string) string {
	var b strings.Builder
	var walk func(dir, prefix string)
	walk = func(dir, prefix string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				t.Fatal(err)
			}
			rel := filepath.Join(prefix, e.Name())
			r := lsRow{ino: st.Ino, mode: st.Mode, nlink: uint32(st.Nlink), uid: st.Uid, gid: st.Gid, size: st.Size,
				major: unix.Major(st.Rdev), minor: unix.Minor(st.Rdev), mtime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
				name: rel}
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				r.target, _ = os.Readlink(p)
			}
			b.WriteString(r.format(lsFlags{long: true, ino: true}) + "\n")
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				walk(p, rel)
			}
		}
	}
	walk(root, "")
	return rdNormalizePlaceholders(b.String())
}

var rdPlaceholderLine = regexp.MustCompile(`(?m)^(\s+2 d\S+\s+\d+\s+\d+\s+\d+\s+\d+ )\S+ \S+`)

// rdNormalizePlaceholders blanks the times of inode-2 placeholder directories.
func rdNormalizePlaceholders(s string) string {
	return rdPlaceholderLine.ReplaceAllString(s, "${1}<now>")
}

func rdLineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)) && len(out) < 20; i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, "kernel: "+a, "ours:   "+b)
		}
	}
	return strings.Join(out, "\n")
}

// rdKernelSegments lists [data, hole) pairs with lseek(2) on the kernel mount.
func rdKernelSegments(p string) ([][2]int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out [][2]int64
	for off := int64(0); ; {
		d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		h, err := unix.Seek(int(f.Fd()), d, unix.SEEK_HOLE)
		if err != nil {
			return nil, err
		}
		out = append(out, [2]int64{d, h})
		off = h
	}
}

func rdOurSegments(f *gobtrfs.File) [][2]int64 {
	var out [][2]int64
	for off := int64(0); ; {
		d, err := f.Seek(off, gobtrfs.SeekData)
		if err != nil {
			return out
		}
		h, err := f.Seek(d, gobtrfs.SeekHole)
		if err != nil {
			return append(out, [2]int64{d, -1})
		}
		out = append(out, [2]int64{d, h})
		off = h
	}
}

// TestKernelExplicitHoles: without the NO_HOLES feature the kernel stores
// holes as extents with disk_bytenr 0; restore and SEEK_HOLE must treat them
// as holes, like the kernel does.
func TestKernelExplicitHoles(t *testing.T) {
	testutil.NeedRootLoop(t)
	img := filepath.Join(t.TempDir(), "holes.img")
	testutil.Mkfs(t, img, 256<<20, "-O", "^no-holes")
	dev := testutil.Loop(t, img)
	mnt := testutil.Mount(t, dev, "")
	w := func(name string, size int64, at ...int64) {
		f, err := os.Create(filepath.Join(mnt, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, off := range at {
			f.WriteAt(bytes.Repeat([]byte{byte(off)}, 5000), off)
		}
		f.Truncate(size)
		f.Close()
	}
	w("sparse", 10<<20, 0, 1<<20, 5<<20+123)
	w("leading-hole", 3<<20, 2<<20)
	w("all-hole", 7<<20)
	w("tail", 100000, 0)
	exec.Command("sync").Run()
	testutil.Unmount(t, mnt)
	checktest.Image(t, img)
	if n := testimg.DumpTreeCount(t, img, "fs", "disk byte 0 nr 0"); n == 0 {
		t.Fatal("no explicit hole extents in the image")
	} else {
		t.Logf("%d explicit hole extents", n)
	}
	mnt = testutil.Mount(t, dev, "ro")
	dest := filepath.Join(t.TempDir(), "out")
	if out, err := rdRunRestore(t, "-q", "--devices", "--keep-setuid", img, dest); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if d := testimg.Compare(mnt, dest, testimg.CompareOptions{Atime: true}); len(d) > 0 {
		t.Fatalf("restore differs:\n%s", strings.Join(d, "\n"))
	}
	fsys, err := gobtrfs.Open(img, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	for _, name := range []string{"sparse", "leading-hole", "all-hole", "tail"} {
		want, _ := rdKernelSegments(filepath.Join(mnt, name))
		restored, _ := rdKernelSegments(filepath.Join(dest, name))
		f, _ := fsys.OpenFile(name)
		got := rdOurSegments(f)
		f.Close()
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(restored) != fmt.Sprint(want) {
			t.Errorf("%s: kernel %v, ours %v, restored file %v", name, want, got, restored)
		}
	}
}
