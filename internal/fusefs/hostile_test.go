package fusefs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// runBounded runs a command on the mount, killed after a minute: a server
// looping on a crafted image fails the test instead of hanging it.
func runBounded(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s %s did not end within a minute; output:\n%.2000s", name, strings.Join(args, " "), out)
	}
	return string(out), err
}

var mountKinds = []struct {
	name string
	opts Options
}{{"ro", Options{ReadOnly: true}}, {"rw", Options{}}}

// TestHostileSelfPointerMount: through the mount (both backends), ls -R and
// find of an image whose FS tree root points at itself end promptly; the
// log names the block and the tree.
func TestHostileSelfPointerMount(t *testing.T) {
	needFuse(t)
	b := hostile.Build(t)
	for _, k := range mountKinds {
		t.Run(k.name, func(t *testing.T) {
			img, root := hostile.SelfPointer(t, b)
			buf := &syncBuf{}
			o := k.opts
			o.Logger = log.New(buf, "", 0)
			dir := filepath.Join(t.TempDir(), "mnt")
			must(t, os.Mkdir(dir, 0o755))
			mt, err := New(img, dir, o)
			if err != nil {
				// the read-write side reads more at open; failing there is fine
				t.Logf("mount failed: %v", err)
				if !strings.Contains(err.Error(), fmt.Sprint(uint64(root))) {
					t.Errorf("mount error does not name block %d: %v", root, err)
				}
				return
			}
			tm := &testMount{Mount: mt, t: t, dir: dir, logBuf: buf}
			t.Cleanup(tm.unmount)
			for _, cmd := range [][]string{{"ls", "-R", dir}, {"find", dir}} {
				out, err := runBounded(t, cmd[0], cmd[1:]...)
				t.Logf("%s: %v, %d bytes of output", cmd[0], err, len(out))
			}
			log := buf.String()
			if !strings.Contains(log, fmt.Sprint(uint64(root))) || !strings.Contains(log, "FS_TREE") {
				t.Errorf("log does not name block %d of FS_TREE:\n%.3000s", root, log)
			}
		})
	}
}

// TestHostileDirLoopMount: a/b/c points at a/b or at the root; find and
// ls -R through the mount end promptly and the log names the entry.
func TestHostileDirLoopMount(t *testing.T) {
	needFuse(t)
	b := hostile.Build(t)
	for _, k := range mountKinds {
		for _, toRoot := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/root=%v", k.name, toRoot), func(t *testing.T) {
				img := hostile.DirLoop(t, b, toRoot)
				tm := mountImage(t, img, k.opts)
				for _, cmd := range [][]string{{"find", tm.dir}, {"ls", "-R", tm.dir}} {
					out, err := runBounded(t, cmd[0], cmd[1:]...)
					if n := strings.Count(out, "\n"); n > 5000 {
						t.Errorf("%s printed %d lines (loop)", cmd[0], n)
					}
					t.Logf("%s: %v, %d lines", cmd[0], err, strings.Count(out, "\n"))
				}
				log := tm.logBuf.String()
				want := fmt.Sprintf("dir %d", b.Ino["a/b"])
				if !strings.Contains(log, want) || !strings.Contains(log, `"c"`) {
					t.Errorf("log does not name %s and entry \"c\":\n%.3000s", want, log)
				}
				if _, err := os.ReadFile(tm.path("many", "f017")); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestHostileNamesMount: entries with '/', NUL or ".." in the name and one
// whose name length runs past its item are skipped by readdir with a log
// line; the siblings are listed and can be looked up.
func TestHostileNamesMount(t *testing.T) {
	needFuse(t)
	b := hostile.Build(t)
	for _, k := range mountKinds {
		t.Run(k.name, func(t *testing.T) {
			img := hostile.BadNames(t, b)
			tm := mountImage(t, img, k.opts)
			es, err := os.ReadDir(tm.path("list"))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			t.Logf("list: %q", names)
			if !slices.Equal(names, hostile.ListGood) {
				t.Errorf("list holds %q, want %q", names, hostile.ListGood)
			}
			for _, g := range hostile.ListGood {
				if _, err := os.ReadFile(tm.path("list", g)); err != nil {
					t.Error(err)
				}
			}
			log := tm.logBuf.String()
			want := fmt.Sprintf("dir %d", b.Ino["list"])
			for _, w := range []string{want, `"sl/sh"`, `".."`} {
				if !strings.Contains(log, w) {
					t.Errorf("log does not name %s:\n%.3000s", w, log)
				}
			}
		})
	}
}

// TestMountOnFileLeavesNoMount: a mount point that is a regular file
// fails the mount and leaves nothing mounted there.
func TestMountOnFileLeavesNoMount(t *testing.T) {
	needFuse(t)
	img := newImage(t, 256<<20)
	for _, k := range mountKinds {
		t.Run(k.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "file")
			must(t, os.WriteFile(file, []byte("x"), 0o644))
			buf := &syncBuf{}
			o := k.opts
			o.Logger = log.New(buf, "", 0)
			mt, err := New(img, file, o)
			if err == nil {
				mt.Unmount()
				mt.Wait()
				mt.Close()
				t.Fatal("mount on a regular file succeeded")
			}
			t.Logf("error: %v", err)
			if mounted(file) {
				exec.Command("umount", "-l", file).Run()
				t.Fatalf("a mount is left on %s", file)
			}
			// the image is free again: a proper mount works
			tm := mountImage(t, img, k.opts)
			if _, err := os.ReadDir(tm.dir); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// mounted reports whether /proc/self/mountinfo lists a mount on dir.
func mounted(dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// TestHostileMalformedDirItemMount: a DIR_INDEX in many/ with a name
// length past its item. The tree-checker rejects its leaf; readdir through
// the mount lists the rest of the directory and logs the block.
func TestHostileMalformedDirItemMount(t *testing.T) {
	needFuse(t)
	b := hostile.Build(t)
	for _, k := range mountKinds {
		t.Run(k.name, func(t *testing.T) {
			tm := mountImage(t, hostile.BadNameLen(t, b, "many/f300"), k.opts)
			es, err := os.ReadDir(tm.path("many"))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			t.Logf("many/: %d entries", len(names))
			if len(names) < hostile.ManyFiles/2 || slices.Contains(names, "f300") || !slices.Contains(names, "f000") {
				t.Errorf("many/ lists %d entries (f300 %v, f000 %v)", len(names),
					slices.Contains(names, "f300"), slices.Contains(names, "f000"))
			}
			if log := tm.logBuf.String(); !strings.Contains(log, "DIR_INDEX 302") || !strings.Contains(log, "read node") {
				t.Errorf("log does not name the damaged block and item:\n%.3000s", log)
			}
		})
	}
}

// TestMountSubvolRootNotDir: a subvolume whose root inode is not a
// directory (crafted) is refused at mount time, naming the inode, instead
// of showing a "directory" that every operation fails on.
func TestMountSubvolRootNotDir(t *testing.T) {
	needFuse(t)
	img := filepath.Join(t.TempDir(), "img")
	must(t, gobtrfs.CreateImage(img, 256<<20))
	w, err := gobtrfs.OpenRW(img, nil)
	must(t, err)
	must(t, w.CreateSubvolume("/sv"))
	must(t, w.WriteFile("/sv/f", []byte("x"), 0o644))
	must(t, w.Close())
	fsys, err := gobtrfs.Open(img, nil)
	must(t, err)
	subs, err := fsys.Subvolumes()
	must(t, err)
	fsys.Close()
	var sv uint64
	for _, s := range subs {
		if s.Path == "sv" {
			sv = s.ID
		}
	}
	p := hostile.Open(t, img)
	p.EditItem(ondisk.ObjectID(sv), ondisk.Key{ObjectID: ondisk.FirstFreeObjectID, Type: ondisk.InodeItemKey}, func(d []byte) {
		binary.LittleEndian.PutUint32(d[52:], syscall.S_IFREG|0o644) // st_mode
	})
	p.Close()
	for _, k := range mountKinds {
		t.Run(k.name, func(t *testing.T) {
			o := k.opts
			o.Subvol = "sv"
			o.Logger = log.New(io.Discard, "", 0)
			dir := t.TempDir()
			mt, err := New(img, dir, o)
			if err == nil {
				mt.Unmount()
				mt.Wait()
				mt.Close()
				t.Fatal("mounted a subvolume whose root is a regular file")
			}
			if !strings.Contains(err.Error(), "not a directory") {
				t.Errorf("error %v does not say the root is not a directory", err)
			}
			if mounted(dir) {
				exec.Command("umount", "-l", dir).Run()
				t.Errorf("a mount is left on %s", dir)
			}
		})
	}
}
