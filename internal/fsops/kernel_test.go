package fsops

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
	"golang.org/x/sys/unix"
)

// describeHost describes a mounted tree the way model.describe does.
func describeHost(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		var body string
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			body = fmt.Sprintf("size %d sha %x", len(data), sha256.Sum256(data))
		case unix.S_IFLNK:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			body = "-> " + target
		default:
			if st.Rdev != 0 {
				body = fmt.Sprintf("rdev %d", ondisk.DecodeDevT(st.Rdev))
			}
		}
		xs := map[string]string{}
		sz, _ := unix.Llistxattr(p, nil)
		if sz > 0 {
			buf := make([]byte, sz)
			sz, _ = unix.Llistxattr(p, buf)
			for _, name := range strings.Split(strings.TrimRight(string(buf[:sz]), "\x00"), "\x00") {
				vsz, err := unix.Lgetxattr(p, name, nil)
				if err != nil {
					return fmt.Errorf("getxattr %s %q: %w", p, name, err)
				}
				v := make([]byte, vsz)
				vsz, err = unix.Lgetxattr(p, name, v)
				if err != nil {
					return err
				}
				xs[name] = string(v[:vsz])
			}
		}
		rel := "/" + strings.TrimPrefix(p, root+"/")
		out[rel] = describeLine(st.Mode, st.Uid, st.Gid, uint32(st.Nlink), body, xs)
		return nil
	})
	must(t, err)
	return out
}

// TestKernelReadsAndExtends writes an image with random operations, lets
// the kernel mount it and compares its view with the model (content, modes,
// owners, links, xattrs, explicit times, hard link identity), lets the
// kernel change it, and checks the result with btrfs check and with fsops.
func TestKernelReadsAndExtends(t *testing.T) {
	testutil.NeedRootLoop(t)
	seed := testutil.Seed(t, *seedFlag)
	for i, io := range []imageOpts{{}, {nodesize: "4096", csum: "xxhash", features: "^no-holes"}} {
		t.Run(io.String(), func(t *testing.T) {
			nops := 800
			if testing.Short() {
				nops = 300
			}
			g := runRandom(t, seed+int64(i), io, Options{}, nops)
			kernelReadsAndExtendsRig(t, g)
		})
	}
}

// kernelReadsAndExtendsRig mounts the image runRandom wrote with Linux
// and compares its view with the model, lets the kernel change it (a file,
// a directory, a symlink, a snapshot, a deletion), checks it, changes the
// kernel's work with fsops and lets the kernel read that.
func kernelReadsAndExtendsRig(t *testing.T, g *rig) {
	t.Helper()
	mnt := testutil.LoopMount(t, g.img, "noatime")
	g.compare("kernel mount", "kernel", describeHost(t, mnt))
	g.checkKernelDetails(mnt)

	// the kernel changes it
	must(t, os.WriteFile(filepath.Join(mnt, "kernel-file"), bytes.Repeat([]byte("k"), 100000), 0o640))
	must(t, os.MkdirAll(filepath.Join(mnt, "kernel-dir/sub"), 0o755))
	must(t, os.Symlink("kernel-file", filepath.Join(mnt, "kernel-dir/link")))
	testutil.Run(t, "btrfs", "subvolume", "snapshot", mnt, filepath.Join(mnt, "kernel-snap"))
	for name, n := range g.m.root.kids {
		if !n.isDir() && name != "kernel-file" {
			must(t, os.Remove(filepath.Join(mnt, name)))
			break
		}
	}
	testutil.Unmount(t, mnt)
	checktest.Image(t, g.img)

	// and fsops reads and changes the kernel's work
	f := openImage(t, g.img, Options{})
	id, x, err := f.Lookup(TopLevel, "kernel-file")
	must(t, err)
	data, err := f.ReadAt(id, 0, int(x.Size))
	must(t, err)
	if !bytes.Equal(data, bytes.Repeat([]byte("k"), 100000)) {
		t.Fatal("kernel-file content differs")
	}
	_, err = f.WriteAt(id, 50000, []byte("fsops"))
	must(t, err)
	snap, _, err := f.Lookup(TopLevel, "kernel-snap")
	must(t, err)
	_, err = f.Create(snap, "in-kernel-snap", 0o644, 0, 0, 0)
	must(t, err)
	must(t, f.DeleteSubvolume(TopLevel, "kernel-snap"))
	must(t, f.Close())
	checktest.Image(t, g.img)
	mnt = testutil.LoopMount(t, g.img, "noatime")
	got, err := os.ReadFile(filepath.Join(mnt, "kernel-file"))
	must(t, err)
	if string(got[50000:50005]) != "fsops" {
		t.Fatal("kernel does not see the fsops write")
	}
	if _, err := os.Stat(filepath.Join(mnt, "kernel-snap")); !os.IsNotExist(err) {
		t.Fatalf("deleted snapshot still visible: %v", err)
	}
}

// checkKernelDetails compares what describe leaves out: explicit times and
// which names share an inode.
func (g *rig) checkKernelDetails(mnt string) {
	g.t.Helper()
	inodes := map[*mnode][2]uint64{}
	g.m.walk(func(p place) {
		if p.name == "" {
			return
		}
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(mnt, p.path), &st); err != nil {
			g.fatalf("kernel: lstat %s: %v", p.path, err)
		}
		n := p.node
		key := [2]uint64{st.Dev, st.Ino}
		if prev, ok := inodes[n]; ok && prev != key {
			g.fatalf("kernel: %s is inode %v, another name of it is %v", p.path, key, prev)
		}
		inodes[n] = key
		if n.times != nil {
			got := [3]time.Time{time.Unix(st.Atim.Unix()), time.Unix(st.Mtim.Unix()), time.Unix(st.Ctim.Unix())}
			for i := range got {
				if !got[i].Equal(n.times[i]) {
					g.fatalf("kernel: %s times %v, model %v", p.path, got, *n.times)
				}
			}
		}
	})
}
