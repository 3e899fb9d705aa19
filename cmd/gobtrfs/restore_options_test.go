package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs"
)

func rdRunRestoreIO(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = restoreMainIO(args, &o, &e)
	return o.String(), e.String(), err
}

// TestRestoreOptions covers btrfs restore's options: -D (dry run: list,
// create nothing), -v (list what is restored), --path-regex (and -c), -u N
// and its old spelling -s N (superblock mirror), --no-metadata and
// --no-symlinks, and the summary line.
func TestRestoreOptions(t *testing.T) {
	img := rdCraft(t, func(w *gobtrfs.RW) {
		rdMust(t, w.MkdirAll("keep/sub", 0o750))
		rdMust(t, w.WriteFile("keep/sub/x", []byte("x"), 0o600))
		rdMust(t, w.MkdirAll("other", 0o755))
		rdMust(t, w.WriteFile("other/y", []byte("y"), 0o644))
		rdMust(t, w.WriteFile("top", []byte("top"), 0o640))
		rdMust(t, w.Symlink("top", "link"))
		rdMust(t, w.Setxattr("top", "user.note", []byte("hi"), 0))
		rdMust(t, w.CreateSubvolume("sv"))
		rdMust(t, w.WriteFile("sv/in-sv", []byte("sv"), 0o644))
		rdMust(t, w.Commit())
		rdMust(t, w.Snapshot("sv", "snap", false))
	})
	all := []string{"keep", "keep/sub", "keep/sub/x", "other", "other/y", "top", "link", "sv/in-sv", "snap/in-sv"}
	exists := func(dest, rel string) bool {
		_, err := os.Lstat(filepath.Join(dest, rel))
		return err == nil
	}

	t.Run("dry-run", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "out")
		stdout, stderr, err := rdRunRestoreIO(t, "-q", "-D", img, dest)
		t.Logf("%v\nstdout:\n%sstderr:\n%s", err, stdout, stderr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(dest); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("dry run created DESTDIR: %v", err)
		}
		for _, rel := range all {
			if !strings.Contains(stdout, filepath.Join(dest, rel)+"\n") {
				t.Errorf("dry run does not list %s", rel)
			}
		}
		rdWantIn(t, stderr, "would restore 5 files")
	})

	t.Run("verbose", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "out")
		stdout, stderr, err := rdRunRestoreIO(t, "-q", "-v", img, dest)
		t.Logf("%v\nstdout:\n%sstderr:\n%s", err, stdout, stderr)
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range all {
			if !strings.Contains(stdout, "Restoring "+filepath.Join(dest, rel)+"\n") {
				t.Errorf("-v does not list %s", rel)
			}
		}
		rdWantIn(t, stderr, "restored 5 files", "5 directories", "1 symlinks", "0 errors")
	})

	t.Run("default", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "out")
		_, stderr, err := rdRunRestoreIO(t, "-q", img, dest)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		for _, rel := range all {
			if !exists(dest, rel) {
				t.Errorf("%s not restored", rel)
			}
		}
		buf := make([]byte, 16)
		if n, err := unix.Lgetxattr(filepath.Join(dest, "top"), "user.note", buf); err != nil || string(buf[:n]) != "hi" {
			t.Errorf("xattr user.note of top: %q %v", buf[:max(n, 0)], err)
		}
		if fi, err := os.Lstat(filepath.Join(dest, "top")); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("top: mode %v, %v", fi.Mode(), err)
		}
	})

	t.Run("path-regex", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "out")
		_, stderr, err := rdRunRestoreIO(t, "-q", "-c", "--path-regex", "^/(|KEEP(|/.*))$", img, dest)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		for _, rel := range all {
			want := strings.HasPrefix(rel, "keep")
			if exists(dest, rel) != want {
				t.Errorf("--path-regex: %s restored: %v, want %v", rel, !want, want)
			}
		}
	})

	t.Run("no-metadata-symlinks-xattrs-snapshots", func(t *testing.T) {
		dest := filepath.Join(t.TempDir(), "out")
		_, stderr, err := rdRunRestoreIO(t, "-q", "--no-metadata", "--no-symlinks", "--no-xattrs", "--no-snapshots", img, dest)
		t.Logf("%v\n%s", err, stderr)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		if exists(dest, "link") {
			t.Error("--no-symlinks restored a symlink")
		}
		if exists(dest, "snap") || !exists(dest, "sv/in-sv") {
			t.Error("--no-snapshots: want sv and not snap")
		}
		if _, err := unix.Lgetxattr(filepath.Join(dest, "top"), "user.note", make([]byte, 16)); err == nil {
			t.Error("--no-xattrs restored an xattr")
		}
		old := unix.Umask(0)
		unix.Umask(old)
		if fi, err := os.Stat(filepath.Join(dest, "top")); err != nil || fi.Mode().Perm() != 0o644&^fs.FileMode(old) {
			t.Errorf("--no-metadata: top %v, want mode %o", fi.Mode(), 0o644&^old)
		}
		rdWantIn(t, stderr, "1 symlinks (--no-symlinks)", "1 snapshots", "skipping snapshot "+filepath.Join(dest, "snap"))
	})

	t.Run("super-mirror", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "img")
		b, err := os.ReadFile(img)
		rdMust(t, err)
		b[64<<10+0x100] ^= 0xff // inside the primary superblock: its checksum fails
		rdMust(t, os.WriteFile(bad, b, 0o644))
		if _, stderr, err := rdRunRestoreIO(t, "-q", "-u", "0", bad, filepath.Join(t.TempDir(), "out")); err == nil {
			t.Errorf("-u 0 used a damaged primary superblock:\n%s", stderr)
		}
		for _, args := range [][]string{{"-u", "1"}, {"--super", "1"}, {"-s", "1"}} {
			dest := filepath.Join(t.TempDir(), "out")
			_, stderr, err := rdRunRestoreIO(t, append(append([]string{"-q"}, args...), bad, dest)...)
			t.Logf("%q: %v\n%s", args, err, stderr)
			if err != nil {
				t.Errorf("%q: %v", args, err)
			}
			if strings.Contains(stderr, "primary superblock unusable") {
				t.Errorf("%q fell back instead of using mirror 1", args)
			}
			if got := rdReadString(t, filepath.Join(dest, "keep/sub/x")); got != "x" {
				t.Errorf("%q: keep/sub/x = %q", args, got)
			}
			if args[0] == "-s" {
				rdWantIn(t, stderr, "-s 1 is read as -u 1")
			}
		}
	})
}
