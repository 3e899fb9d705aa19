package main

// Hostile images through restore (issue 7, "Hostile images are contained"):
// each image is made with the public write API, checked with btrfs check,
// then damaged in place with internal/testimg's Editor (fresh checksums, so
// the damage reaches restore). Restores that could hang run in a child
// process with a timeout, so a regression fails instead of hanging.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// rdHostileTimeout bounds a restore of a tiny crafted image: it takes well
// under a second; the margin is for a loaded machine.
const rdHostileTimeout = 60 * time.Second

// rdCapped keeps the first 256 KiB written to it (a runaway restore can
// print gigabytes of errors).
type rdCapped struct{ bytes.Buffer }

func (c *rdCapped) Write(p []byte) (int, error) {
	if room := 256<<10 - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// rdRestoreProc runs restore in a child process killed after
// rdHostileTimeout; it returns the combined output and the exit status,
// and fails the test when the restore had to be killed.
func rdRestoreProc(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rdHostileTimeout)
	defer cancel()
	cmd := gobtrfsCmd(ctx, append([]string{"restore"}, args...)...)
	var out rdCapped
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("restore %q did not end within %v (killed); output:\n%s", args, rdHostileTimeout, rdHead(out.String()))
	}
	t.Logf("restore %q: %v after %v", args, err, time.Since(start).Round(time.Millisecond))
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	t.Fatalf("run restore: %v", err)
	return "", -1
}

func rdHead(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "\n..."
	}
	return s
}

func rdMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// rdCraft makes a 128 MiB image with the public write API, has btrfs check
// pass it, and returns its path.
func rdCraft(t *testing.T, build func(w *gobtrfs.RW)) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	rdMust(t, gobtrfs.CreateImage(img, 128<<20))
	w, err := gobtrfs.OpenRW(img, nil)
	rdMust(t, err)
	build(w)
	rdMust(t, w.Close())
	checktest.Image(t, img)
	return img
}

// rdIno returns the inode number of name in the top-level subvolume of img.
func rdIno(t *testing.T, img, name string) uint64 {
	t.Helper()
	fsys, err := gobtrfs.Open(img, &gobtrfs.Options{SubvolID: 5})
	rdMust(t, err)
	defer fsys.Close()
	fi, err := fsys.Lstat(name)
	rdMust(t, err)
	return fi.Sys().(*gobtrfs.Stat).Ino
}

// rdPatch runs fn on a patcher of img in a subtest, so that the image is
// closed (and unlocked) when fn returns.
func rdPatch(t *testing.T, img string, fn func(t *testing.T, p *hostile.Patcher)) {
	t.Helper()
	if !t.Run("patch", func(t *testing.T) { fn(t, hostile.Open(t, img)) }) {
		t.FailNow()
	}
}

// rdEditDirIndex rewrites the DIR_INDEX item (only: the DIR_ITEM stays as
// it is, matching its name hash) of entry name in directory dir of the
// top-level subvolume through fn, which gets the btrfs_dir_item (location
// key at 0) and the name.
func rdEditDirIndex(t *testing.T, p *hostile.Patcher, dir uint64, name string, fn func(d []byte)) {
	t.Helper()
	tr, err := p.Info().Tree(ondisk.FSTreeObjectID)
	rdMust(t, err)
	var key *ondisk.Key
	rdMust(t, tr.Range(ondisk.Key{ObjectID: ondisk.ObjectID(dir), Type: ondisk.DirIndexKey},
		ondisk.Key{ObjectID: ondisk.ObjectID(dir), Type: ondisk.DirIndexKey, Offset: ^uint64(0)},
		func(k ondisk.Key, d []byte) bool {
			if di, _, err := item.DecodeDirItem(d); err == nil && string(di.Name) == name {
				key = &k
				return false
			}
			return true
		}))
	if key == nil {
		t.Fatalf("dir %d: no DIR_INDEX named %q", dir, name)
	}
	p.EditItem(ondisk.FSTreeObjectID, *key, fn)
}

// rdRenameIndex gives a DIR_INDEX entry another name of the same length.
func rdRenameIndex(t *testing.T, p *hostile.Patcher, dir uint64, from, to string) {
	t.Helper()
	if len(from) != len(to) {
		t.Fatalf("rename %q to %q: lengths differ", from, to)
	}
	rdEditDirIndex(t, p, dir, from, func(d []byte) { copy(d[item.DirItemHeaderSize:], to) })
}

// rdSnapshot describes every entry under dir (type, mode, size, content
// hash or link target) to compare before and after a restore.
func rdSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			out[p] = "error " + err.Error()
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			out[p] = "error " + err.Error()
			return nil
		}
		desc := fmt.Sprintf("mode %o size %d", st.Mode, st.Size)
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			b, _ := os.ReadFile(p)
			desc += fmt.Sprintf(" sha %x", sha256.Sum256(b))
		case unix.S_IFLNK:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		}
		out[p] = desc
		return nil
	})
	return out
}

func rdSameSnapshot(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	if d := testutil.DiffMaps(before, after); len(d) > 0 {
		t.Errorf("restore changed %s:\n%s", what, strings.Join(d, "\n"))
	}
}

func rdWantIn(t *testing.T, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Errorf("restore output does not mention %q:\n%s", s, rdHead(out))
		}
	}
}

func rdReadString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("%v", err)
	}
	return string(b)
}

func rdLinkTarget(t *testing.T, p string) string {
	t.Helper()
	l, err := os.Readlink(p)
	if err != nil {
		t.Errorf("%v", err)
	}
	return l
}

// TestRestoreDuplicateNames restores a directory where a symlink and then a
// regular file share a name ("d" -> a victim file outside DESTDIR), a
// symlink and then a directory share another ("s" -> a canary directory
// outside), and entries are named "../victim" and "..". Nothing outside
// DESTDIR may change; the first of each duplicate is restored and the
// second reported as corruption naming directory, inode and name; the
// unsafe names are reported and skipped; the rest is restored; the exit
// status is non-zero. Both ways of opening directories are exercised:
// openat2 and the component-by-component fallback.
func TestRestoreDuplicateNames(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	rdMust(t, os.WriteFile(victim, []byte("original\n"), 0o600))
	canary := filepath.Join(outside, "canary")
	rdMust(t, os.Mkdir(canary, 0o755))

	img := rdCraft(t, func(w *gobtrfs.RW) {
		rdMust(t, w.Mkdir("top", 0o755))
		rdMust(t, w.Symlink(victim, "top/d"))
		rdMust(t, w.WriteFile("top/e", []byte("pwned\n"), 0o777)) // becomes a second "d"
		rdMust(t, w.Symlink(canary, "top/s"))
		rdMust(t, w.Mkdir("top/t", 0o777)) // becomes a second "s"
		rdMust(t, w.WriteFile("top/t/x", []byte("escaped\n"), 0o644))
		rdMust(t, w.WriteFile("top/abcdefghi", []byte("pwned\n"), 0o644)) // becomes "../victim"
		rdMust(t, w.WriteFile("top/zz", []byte("pwned\n"), 0o644))        // becomes ".."
		rdMust(t, w.WriteFile("top/keep", []byte("kept\n"), 0o644))
	})
	top := rdIno(t, img, "top")
	fileIno := rdIno(t, img, "top/e")
	rdPatch(t, img, func(t *testing.T, p *hostile.Patcher) {
		rdRenameIndex(t, p, top, "e", "d")
		rdRenameIndex(t, p, top, "t", "s")
		rdRenameIndex(t, p, top, "abcdefghi", "../victim")
		rdRenameIndex(t, p, top, "zz", "..")
	})

	for _, fallback := range []bool{false, true} {
		t.Run(fmt.Sprintf("fallback=%v", fallback), func(t *testing.T) {
			before := rdSnapshot(t, outside)
			parent := t.TempDir()
			dest := filepath.Join(parent, "out")
			var stdout, stderr bytes.Buffer
			o := defaultRestoreOptions()
			o.quiet = true
			o.forceFallback = fallback
			err := restoreRun(img, dest, o, &stdout, &stderr)
			out := stderr.String()
			t.Logf("restore: %v\n%s", err, out)
			if err == nil {
				t.Error("restore of an image with duplicate and unsafe names succeeded")
			}
			rdSameSnapshot(t, "files outside DESTDIR", before, rdSnapshot(t, outside))
			if got := rdReadString(t, victim); got != "original\n" {
				t.Errorf("victim outside DESTDIR now holds %q", got)
			}
			if ents, _ := os.ReadDir(canary); len(ents) > 0 {
				t.Errorf("restore created %d entries in the canary directory outside DESTDIR", len(ents))
			}
			if ents, _ := os.ReadDir(parent); len(ents) != 1 {
				t.Errorf("DESTDIR's parent holds %d entries, want 1 (DESTDIR)", len(ents))
			}
			rdWantIn(t, out, "duplicate", `"d"`, `"s"`, "top", fmt.Sprint(top), fmt.Sprint(fileIno), `"../victim"`, `".."`)
			if got := rdLinkTarget(t, filepath.Join(dest, "top/d")); got != victim {
				t.Errorf("top/d: the first entry (symlink) was not restored: %q", got)
			}
			if got := rdLinkTarget(t, filepath.Join(dest, "top/s")); got != canary {
				t.Errorf("top/s: the first entry (symlink) was not restored: %q", got)
			}
			if got := rdReadString(t, filepath.Join(dest, "top/keep")); got != "kept\n" {
				t.Errorf("top/keep = %q", got)
			}
		})
	}
}

// TestRestoreOverwrite: without -o existing files in DESTDIR are kept (a
// message names them), with -o they are replaced; an existing symlink at a
// file's or a directory's place is replaced, never followed.
func TestRestoreOverwrite(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	rdMust(t, os.WriteFile(victim, []byte("original\n"), 0o600))
	canary := filepath.Join(outside, "canary")
	rdMust(t, os.Mkdir(canary, 0o755))
	img := rdCraft(t, func(w *gobtrfs.RW) {
		rdMust(t, w.WriteFile("a", []byte("new a"), 0o644))
		rdMust(t, w.WriteFile("b", []byte("new b"), 0o644))
		rdMust(t, w.WriteFile("c", []byte("new c"), 0o644))
		rdMust(t, w.Mkdir("d", 0o755))
		rdMust(t, w.WriteFile("d/f", []byte("new f"), 0o644))
		rdMust(t, w.Mkdir("d2", 0o755))
		rdMust(t, w.WriteFile("d2/f", []byte("new d2/f"), 0o644))
		rdMust(t, w.Symlink("new-target", "l"))
	})
	dest := filepath.Join(t.TempDir(), "out")
	rdMust(t, os.Mkdir(dest, 0o755))
	rdMust(t, os.WriteFile(filepath.Join(dest, "a"), []byte("old a"), 0o644))
	rdMust(t, os.Symlink(victim, filepath.Join(dest, "b")))
	rdMust(t, os.Mkdir(filepath.Join(dest, "d"), 0o755))
	rdMust(t, os.WriteFile(filepath.Join(dest, "d/f"), []byte("old f"), 0o644))
	rdMust(t, os.Symlink(canary, filepath.Join(dest, "d2")))
	rdMust(t, os.Symlink("old-target", filepath.Join(dest, "l")))
	before := rdSnapshot(t, outside)

	out, err := rdRunRestore(t, "-q", img, dest)
	t.Logf("restore: %v\n%s", err, out)
	if err != nil {
		t.Errorf("restore without -o: %v", err)
	}
	rdWantIn(t, out, "existing", filepath.Join(dest, "a"), "-o")
	if got := rdReadString(t, filepath.Join(dest, "a")); got != "old a" {
		t.Errorf("without -o, existing file a was overwritten: %q", got)
	}
	if got := rdReadString(t, filepath.Join(dest, "d/f")); got != "old f" {
		t.Errorf("without -o, existing file d/f was overwritten: %q", got)
	}
	if got := rdLinkTarget(t, filepath.Join(dest, "l")); got != "old-target" {
		t.Errorf("without -o, existing symlink l was replaced: %q", got)
	}
	if got := rdReadString(t, filepath.Join(dest, "c")); got != "new c" {
		t.Errorf("new file c = %q", got)
	}
	rdSameSnapshot(t, "files outside DESTDIR (without -o)", before, rdSnapshot(t, outside))

	out, err = rdRunRestore(t, "-q", "-o", img, dest)
	t.Logf("restore -o: %v\n%s", err, out)
	if err != nil {
		t.Errorf("restore -o: %v", err)
	}
	for name, want := range map[string]string{"a": "new a", "b": "new b", "c": "new c", "d/f": "new f", "d2/f": "new d2/f"} {
		p := filepath.Join(dest, name)
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("with -o, %s is not a regular file: %v", name, err)
		} else if got := rdReadString(t, p); got != want {
			t.Errorf("with -o, %s = %q, want %q", name, got, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dest, "d2")); err != nil || !fi.IsDir() {
		t.Errorf("with -o, the symlink d2 was not replaced by a directory: %v", err)
	}
	if got := rdLinkTarget(t, filepath.Join(dest, "l")); got != "new-target" {
		t.Errorf("with -o, symlink l = %q", got)
	}
	rdSameSnapshot(t, "files outside DESTDIR (with -o)", before, rdSnapshot(t, outside))
}

// TestRestoreDevicesSetuid: device nodes are skipped with a message and
// setuid/setgid bits (and file capabilities) dropped unless --devices and
// --keep-setuid ask for them; fifos and a setgid directory are restored
// as they are.
func TestRestoreDevicesSetuid(t *testing.T) {
	// struct vfs_cap_data revision 2: cap_net_raw permitted
	capv2 := make([]byte, 20)
	binary.LittleEndian.PutUint32(capv2[0:], 0x02000000)
	binary.LittleEndian.PutUint32(capv2[4:], 1<<13)
	img := rdCraft(t, func(w *gobtrfs.RW) {
		rdMust(t, w.Mknod("null", unix.S_IFCHR|0o666, 1<<20|3))
		rdMust(t, w.Mknod("sda1", unix.S_IFBLK|0o660, 8<<20|1))
		rdMust(t, w.Mknod("fifo", unix.S_IFIFO|0o640, 0))
		rdMust(t, w.WriteFile("suid", []byte("#!/bin/sh\n"), 0o755))
		rdMust(t, w.Chmod("suid", fs.ModeSetuid|0o755))
		rdMust(t, w.WriteFile("sgid", []byte("#!/bin/sh\n"), 0o755))
		rdMust(t, w.Chmod("sgid", fs.ModeSetgid|0o755))
		rdMust(t, w.WriteFile("capped", []byte("#!/bin/sh\n"), 0o755))
		rdMust(t, w.Setxattr("capped", "security.capability", capv2, 0))
		rdMust(t, w.Mkdir("sgiddir", 0o755))
		rdMust(t, w.Chmod("sgiddir", fs.ModeSetgid|0o775))
	})
	mode := func(p string) uint32 {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Errorf("%v", err)
		}
		return st.Mode
	}

	dest := filepath.Join(t.TempDir(), "out")
	out, err := rdRunRestore(t, "-q", img, dest)
	t.Logf("restore: %v\n%s", err, out)
	if err != nil {
		t.Errorf("restore: %v", err)
	}
	for _, n := range []string{"null", "sda1"} {
		if _, err := os.Lstat(filepath.Join(dest, n)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("device node %s restored without --devices (%v)", n, err)
		}
	}
	rdWantIn(t, out, "null", "sda1", "--devices", "--keep-setuid")
	if m := mode(filepath.Join(dest, "suid")); m != unix.S_IFREG|0o755 {
		t.Errorf("suid: mode %o without --keep-setuid", m)
	}
	if m := mode(filepath.Join(dest, "sgid")); m != unix.S_IFREG|0o755 {
		t.Errorf("sgid: mode %o without --keep-setuid", m)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dest, "capped"), "security.capability", make([]byte, 64)); err == nil {
		t.Error("capped: security.capability restored without --keep-setuid")
	}
	if m := mode(filepath.Join(dest, "sgiddir")); m != unix.S_IFDIR|0o2775 {
		t.Errorf("sgiddir: mode %o, want the setgid directory kept", m)
	}
	if m := mode(filepath.Join(dest, "fifo")); m != unix.S_IFIFO|0o640 {
		t.Errorf("fifo: mode %o", m)
	}

	if os.Geteuid() != 0 {
		t.Log("not root: device nodes and file capabilities cannot be made; checking --keep-setuid only")
		dest = filepath.Join(t.TempDir(), "out")
		out, err = rdRunRestore(t, "-q", "--keep-setuid", img, dest)
		t.Logf("restore --keep-setuid: %v\n%s", err, out)
		if m := mode(filepath.Join(dest, "suid")); m != unix.S_IFREG|0o4755 {
			t.Errorf("suid: mode %o with --keep-setuid", m)
		}
		return
	}
	dest = filepath.Join(t.TempDir(), "out")
	out, err = rdRunRestore(t, "-q", "--devices", "--keep-setuid", img, dest)
	t.Logf("restore --devices --keep-setuid: %v\n%s", err, out)
	if err != nil {
		t.Errorf("restore --devices --keep-setuid: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dest, "null"), &st); err != nil || st.Mode != unix.S_IFCHR|0o666 ||
		unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
		t.Errorf("null: %v mode %o rdev %d:%d", err, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	if err := unix.Lstat(filepath.Join(dest, "sda1"), &st); err != nil || st.Mode != unix.S_IFBLK|0o660 ||
		unix.Major(st.Rdev) != 8 || unix.Minor(st.Rdev) != 1 {
		t.Errorf("sda1: %v mode %o rdev %d:%d", err, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev))
	}
	if m := mode(filepath.Join(dest, "suid")); m != unix.S_IFREG|0o4755 {
		t.Errorf("suid: mode %o with --keep-setuid", m)
	}
	if m := mode(filepath.Join(dest, "sgid")); m != unix.S_IFREG|0o2755 {
		t.Errorf("sgid: mode %o with --keep-setuid", m)
	}
	buf := make([]byte, 64)
	if n, err := unix.Lgetxattr(filepath.Join(dest, "capped"), "security.capability", buf); err != nil ||
		!bytes.Equal(buf[:n], capv2) {
		t.Errorf("capped: security.capability %x, %v with --keep-setuid", buf[:max(n, 0)], err)
	}
}

// TestRestoreDirCycle: a directory entry that points back at the directory
// itself, at the root, or at an ancestor ends promptly (child process with a
// timeout) with an error naming the entry and the directory it names; the
// rest is restored. (The library refuses such entries before restore sees
// them; TestRestoreGuards reaches restore's own checks.)
func TestRestoreDirCycle(t *testing.T) {
	testutil.NeedProgs(t)
	base := hostile.Build(t)
	checktest.Image(t, base.Path)
	for _, c := range []struct {
		name  string
		entry string // path of the damaged entry
		make  func(t *testing.T) string
	}{
		{"self", "a/b/c", func(t *testing.T) string { return hostile.DirLoop(t, base, false) }},
		{"root", "a/b/c", func(t *testing.T) string { return hostile.DirLoop(t, base, true) }},
		{"ancestor", "a/b/c/d", func(t *testing.T) string {
			img := base.Copy(t, "ancestor.img")
			rdPatch(t, img, func(t *testing.T, p *hostile.Patcher) {
				p.EditDirEntry(base.Ino["a/b/c"], "d", func(d []byte) { binary.LittleEndian.PutUint64(d[0:], base.Ino["a"]) })
			})
			return img
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			img := c.make(t)
			dest := filepath.Join(t.TempDir(), "out")
			out, code := rdRestoreProc(t, "-q", img, dest)
			t.Logf("exit %d:\n%s", code, rdHead(out))
			if code == 0 {
				t.Error("restore of a directory cycle succeeded")
			}
			rdWantIn(t, out, c.entry)
			for _, p := range []string{"many/f000", "many/f599", "list/good1", "a/b/c/file"} {
				if c.name != "ancestor" && p == "a/b/c/file" {
					continue
				}
				if _, err := os.Stat(filepath.Join(dest, p)); err != nil {
					t.Errorf("not restored: %v", err)
				}
			}
			n := 0
			filepath.WalkDir(dest, func(string, fs.DirEntry, error) error { n++; return nil })
			if n > hostile.ManyFiles+30 {
				t.Errorf("restore made %d entries from an image of about %d", n, hostile.ManyFiles+20)
			}
		})
	}
}

// TestRestoreHugeSize: an i_size of 2^62 on a regular file with one data
// extent, and on an inline one, ends promptly (child process with a
// timeout) with an error naming the inode and the size; the data present
// is restored and the rest of the tree too.
func TestRestoreHugeSize(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 8192/16)
	img := rdCraft(t, func(w *gobtrfs.RW) {
		rdMust(t, w.WriteFile("big", data, 0o644))
		rdMust(t, w.WriteFile("inline", []byte("tiny"), 0o644))
		rdMust(t, w.WriteFile("ok", []byte("ok"), 0o644))
	})
	inos := []uint64{rdIno(t, img, "big"), rdIno(t, img, "inline")}
	rdPatch(t, img, func(t *testing.T, p *hostile.Patcher) {
		for _, ino := range inos {
			p.EditItem(ondisk.FSTreeObjectID, ondisk.Key{ObjectID: ondisk.ObjectID(ino), Type: ondisk.InodeItemKey},
				func(d []byte) { binary.LittleEndian.PutUint64(d[16:], 1<<62) }) // btrfs_inode_item.size
		}
	})
	dest := filepath.Join(t.TempDir(), "out")
	out, code := rdRestoreProc(t, "-q", img, dest)
	t.Logf("exit %d:\n%s", code, rdHead(out))
	if code == 0 {
		t.Error("restore of files with i_size 2^62 succeeded")
	}
	rdWantIn(t, out, fmt.Sprint(inos[0]), fmt.Sprint(inos[1]), fmt.Sprint(uint64(1)<<62))
	if got := rdReadString(t, filepath.Join(dest, "big")); got != string(data) {
		t.Errorf("big: %d bytes restored, want the %d bytes of its extent", len(got), len(data))
	}
	if got := rdReadString(t, filepath.Join(dest, "inline")); got != "tiny" {
		t.Errorf("inline: %q", got)
	}
	if got := rdReadString(t, filepath.Join(dest, "ok")); got != "ok" {
		t.Errorf("ok: %q", got)
	}
	// ext4 refuses a 4 EiB file; tmpfs (like xfs or btrfs) makes one
	var sfs unix.Statfs_t
	if unix.Statfs("/dev/shm", &sfs) != nil || sfs.Type != unix.TMPFS_MAGIC {
		t.Log("no tmpfs at /dev/shm: not restoring onto a filesystem that takes exabyte files")
		return
	}
	shm, err := os.MkdirTemp("/dev/shm", "restore-hugesize-")
	rdMust(t, err)
	t.Cleanup(func() { os.RemoveAll(shm) })
	out, code = rdRestoreProc(t, "-q", img, filepath.Join(shm, "out"))
	t.Logf("onto tmpfs: exit %d:\n%s", code, rdHead(out))
	for name, want := range map[string]int64{"big": int64(len(data)), "inline": 4} {
		if fi, err := os.Stat(filepath.Join(shm, "out", name)); err != nil || fi.Size() != want {
			t.Errorf("onto tmpfs: %s: %v, size %d, want %d (the end of its data)", name, err, fi.Size(), want)
		}
	}
}
