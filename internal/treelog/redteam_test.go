package treelog_test

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// Red-team cases of the fsync log writer: each runs a workload after the
// commit that newLoggedImage makes, fsyncs, copies the image (the power
// cut) and compares both replays (ours, the kernel's) with each other and
// with what the fsyncs made durable; btrfs check must pass on the image as
// left and after each replay.

func describe(mode uint32, nlink uint64, size uint64, content []byte, target string, xattrs map[string]string) string {
	var b strings.Builder
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		fmt.Fprintf(&b, "dir %o", mode&0o7777)
	case unix.S_IFREG:
		fmt.Fprintf(&b, "file %o nlink=%d size=%d", mode&0o7777, nlink, size)
		if len(content) <= 48 {
			fmt.Fprintf(&b, " %q", content)
		} else {
			fmt.Fprintf(&b, " sha=%x", sha256.Sum256(content))
		}
	case unix.S_IFLNK:
		fmt.Fprintf(&b, "symlink -> %q nlink=%d", target, nlink)
	default:
		fmt.Fprintf(&b, "mode %o nlink=%d", mode, nlink)
	}
	keys := make([]string, 0, len(xattrs))
	for k := range xattrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%q", k, xattrs[k])
	}
	return b.String()
}

// oursRich opens img with fsops (replaying its log) and describes it.
func oursRich(t *testing.T, img string) map[string]string {
	t.Helper()
	f, err := fsops.OpenImage(img, fsops.Options{})
	if err != nil {
		t.Fatalf("our replay: open %s: %v", img, err)
	}
	defer func() { mustT(t, f.Close()) }()
	view := map[string]string{}
	var walk func(id ondisk.InodeRef, p string)
	walk = func(id ondisk.InodeRef, p string) {
		ents, err := f.ReadDir(id)
		if err != nil {
			t.Fatalf("our replay: readdir %q: %v", p, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name < ents[j].Name })
		for _, e := range ents {
			q := path.Join(p, e.Name)
			cid, ii, err := f.Lookup(id, e.Name)
			if err != nil {
				t.Fatalf("our replay: lookup %q: %v", q, err)
			}
			if ii.Mode&unix.S_IFMT == unix.S_IFDIR && cid.Root != id.Root {
				continue // another subvolume
			}
			xs := map[string]string{}
			names, err := f.ListXattr(cid)
			if err != nil {
				t.Fatalf("our replay: listxattr %q: %v", q, err)
			}
			for _, n := range names {
				v, err := f.GetXattr(cid, n)
				if err != nil {
					t.Fatalf("our replay: getxattr %q %s: %v", q, n, err)
				}
				xs[n] = string(v)
			}
			var content []byte
			var target string
			switch ii.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				if content, err = f.ReadAt(cid, 0, int(ii.Size)); err != nil {
					t.Fatalf("our replay: read %q: %v", q, err)
				}
			case unix.S_IFLNK:
				if target, err = f.Readlink(cid); err != nil {
					t.Fatalf("our replay: readlink %q: %v", q, err)
				}
			}
			view[q] = fmt.Sprintf("ino=%d ", cid.Ino) + describe(ii.Mode, uint64(ii.NLink), ii.Size, content, target, xs)
			if ii.Mode&unix.S_IFMT == unix.S_IFDIR {
				walk(cid, q)
			}
		}
	}
	walk(topDir, "")
	return view
}

// kernelRich mounts img (the kernel replays its log) and describes it.
func kernelRich(t *testing.T, img string) map[string]string {
	t.Helper()
	mnt := testutil.LoopMount(t, img, "")
	defer testutil.Unmount(t, mnt)
	view := map[string]string{}
	var rootIno uint64
	err := filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if rel == "." {
			rootIno = st.Ino
			return nil
		}
		if d.IsDir() && st.Ino == 256 && rootIno == 256 {
			return filepath.SkipDir // another subvolume's root
		}
		xs := map[string]string{}
		buf := make([]byte, 64<<10)
		n, err := unix.Llistxattr(p, buf)
		if err != nil {
			return err
		}
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if name == "" {
				continue
			}
			v := make([]byte, 64<<10)
			m, err := unix.Lgetxattr(p, name, v)
			if err != nil {
				return fmt.Errorf("getxattr %s %s: %w", p, name, err)
			}
			xs[name] = string(v[:m])
		}
		var content []byte
		var target string
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if content, err = os.ReadFile(p); err != nil {
				return err
			}
		case unix.S_IFLNK:
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		view[rel] = fmt.Sprintf("ino=%d ", st.Ino) + describe(st.Mode, uint64(st.Nlink), uint64(st.Size), content, target, xs)
		return nil
	})
	if err != nil {
		t.Errorf("kernel replay: walk: %v", err)
	}
	return view
}

// crashCheck is the power cut right after the last fsync: the image is
// copied; btrfs check must pass on it, our replay and the kernel's must
// agree, btrfs check must pass after each, and want (paths to exact
// descriptions, or "" for a path that must be absent) must hold in both.
func crashCheck(t *testing.T, img string, want map[string]string) (ours, kern map[string]string) {
	t.Helper()
	crash := copyFile(t, img)
	if sb := readSuper(t, crash); sb.LogRoot == 0 {
		t.Logf("note: no log tree on disk (the fsyncs committed)")
	}
	testutil.CheckImage(t, crash, "--check-data-csum")
	oc := copyFile(t, crash)
	ours = oursRich(t, oc)
	testutil.CheckImage(t, oc, "--check-data-csum")
	checkWant(t, "our replay", ours, want)
	if !testutil.HaveRootLoop() {
		return ours, nil
	}
	kern = kernelRich(t, crash)
	t.Logf("kernel replay: %d paths; ours: %d", len(kern), len(ours))
	testutil.CheckImage(t, crash, "--check-data-csum")
	if d := testutil.DiffMaps(kern, ours); len(d) > 0 {
		t.Errorf("our replay (got) differs from the kernel's (want):\n%s", strings.Join(d, "\n"))
	}
	checkWant(t, "kernel replay", kern, want)
	return ours, kern
}

// checkWant compares a replay's view with want: a path maps to the
// description it must have ("" absent); a key "#N" says that inode N must
// be there under some name, with that description.
func checkWant(t *testing.T, who string, view, want map[string]string) {
	t.Helper()
	for p, w := range want {
		if strings.HasPrefix(p, "#") {
			prefix := "ino=" + p[1:] + " "
			found := false
			for q, got := range view {
				if strings.HasPrefix(got, prefix) {
					found = true
					if got[len(prefix):] != w {
						t.Errorf("%s: inode %s at %s is %q, want %q", who, p[1:], q, got[len(prefix):], w)
					}
				}
			}
			if !found {
				t.Errorf("%s: inode %s is not there, want %q", who, p[1:], w)
			}
			continue
		}
		got, ok := view[p]
		if i := strings.Index(got, " "); ok {
			got = got[i+1:]
		}
		if w == "" && ok {
			t.Errorf("%s: %s exists (%s), want it absent", who, p, got)
		} else if w != "" && got != w {
			t.Errorf("%s: %s is %q, want %q", who, p, got, w)
		}
	}
}

// fileDesc is describe for a regular file without xattrs.
func fileDesc(perm uint32, nlink int, data []byte) string {
	return describe(unix.S_IFREG|perm, uint64(nlink), uint64(len(data)), data, "", nil)
}

func write(t *testing.T, f *fsops.FS, id ondisk.InodeRef, off uint64, data []byte) {
	t.Helper()
	_, err := f.WriteAt(id, off, data)
	mustT(t, err)
}

func create(t *testing.T, f *fsops.FS, dir ondisk.InodeRef, name string, data []byte) ondisk.InodeRef {
	t.Helper()
	id, err := f.Create(dir, name, 0o100644, 0, 0, 0)
	mustT(t, err)
	if data != nil {
		write(t, f, id, 0, data)
	}
	return id
}

func mkdir(t *testing.T, f *fsops.FS, dir ondisk.InodeRef, name string) ondisk.InodeRef {
	t.Helper()
	id, err := f.Mkdir(dir, name, 0o40755, 0, 0)
	mustT(t, err)
	return id
}

func logStats(t *testing.T, f *fsops.FS) {
	t.Helper()
	st := f.FsyncStats()
	t.Logf("fsync stats: logged %d, commits %v", st.Logged, st.Commits)
}

var _ = bytes.Equal
