package check

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// kernelCorruptions damage what only a kernel-made image has: subvolume
// links, blocks shared by snapshots, FULL_BACKREF blocks.
func kernelCorruptions() []corruption {
	return []corruption{
		{name: "root-ref/backref-name", class: ClassRootRef, apply: func(e *editor) target {
			f := e.find(ondisk.RootTreeObjectID, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.RootBackrefKey })
			e.editItem(f, func(d []byte) { d[len(d)-1] ^= 0x20 })
			return target{tree: ondisk.RootTreeObjectID, key: &f.key}
		}},
		{name: "root-ref/subvol-entry", class: ClassRootRef, apply: func(e *editor) target {
			ref := e.find(ondisk.RootTreeObjectID, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.RootRefKey })
			f := e.find(ref.key.ObjectID, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.DirIndexKey && ondisk.DecodeKey(d).Type == ondisk.RootItemKey
			})
			e.editItem(f, func(d []byte) { le64.PutUint64(d, le64.Uint64(d)+1000) })
			return target{tree: ondisk.RootTreeObjectID}
		}},
		{name: "extent/shared-block-refs", class: ClassExtent, apply: func(e *editor) target {
			f := e.find(ondisk.ExtentTreeObjectID, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.MetadataItemKey && le64.Uint64(d) >= 2
			})
			e.editItem(f, func(d []byte) { le64.PutUint64(d, le64.Uint64(d)+1) })
			return target{tree: ondisk.ExtentTreeObjectID, key: &f.key}
		}},
		{name: "extent/shared-ref-parent", class: ClassExtent, apply: func(e *editor) target {
			// a backref by parent block (FULL_BACKREF leaves of snapshots)
			var at int
			f := e.find(ondisk.ExtentTreeObjectID, func(k ondisk.Key, d []byte) bool {
				if k.Type != ondisk.MetadataItemKey && k.Type != ondisk.ExtentItemKey || len(d) < item.ExtentItemSize {
					return false
				}
				p0 := item.ExtentItemSize
				if k.Type == ondisk.ExtentItemKey && le64.Uint64(d[16:])&item.ExtentFlagTreeBlock != 0 {
					p0 += item.TreeBlockInfoSize
				}
				for p := p0; p+9 <= len(d); p += item.InlineRefSize(ondisk.ItemType(d[p])) {
					if t := ondisk.ItemType(d[p]); t == ondisk.SharedBlockRefKey || t == ondisk.SharedDataRefKey {
						at = p
						return true
					}
					if item.InlineRefSize(ondisk.ItemType(d[p])) == 0 {
						return false
					}
				}
				return false
			})
			e.editItem(f, func(d []byte) { le64.PutUint64(d[at+1:], le64.Uint64(d[at+1:])+uint64(e.fi.Super.NodeSize)) })
			return target{tree: ondisk.ExtentTreeObjectID, key: &f.key}
		}},
		{name: "extent/inline-ref-order", class: ClassTree, progsBlind: "btrfs check 6.2 does not check the order of inline refs", apply: func(e *editor) target {
			// btrfs-progs fsck-tests/061: two EXTENT_DATA_REFs of a
			// reflinked extent swapped; the tree-checker refuses the leaf
			const ref = 1 + 8 + 8 + 8 + 4
			p := item.ExtentItemSize
			f := e.find(ondisk.ExtentTreeObjectID, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.ExtentItemKey && len(d) >= p+2*ref && le64.Uint64(d[16:])&item.ExtentFlagData != 0 &&
					ondisk.ItemType(d[p]) == ondisk.ExtentDataRefKey && ondisk.ItemType(d[p+ref]) == ondisk.ExtentDataRefKey &&
					string(d[p+1:p+ref-4]) != string(d[p+ref+1:p+2*ref-4])
			})
			e.editItem(f, func(d []byte) {
				a := append([]byte(nil), d[p:p+ref]...)
				copy(d[p:], d[p+ref:p+2*ref])
				copy(d[p+ref:], a)
			})
			return target{tree: ondisk.ExtentTreeObjectID, block: f.leaf, msgKey: &f.key}
		}},
		{name: "inode/snapshot-nbytes", class: ClassInode, apply: func(e *editor) target {
			// snapshot snap2: its inodes sit in blocks shared with sv
			ref := e.find(ondisk.RootTreeObjectID, func(k ondisk.Key, d []byte) bool {
				return k.Type == ondisk.RootRefKey && string(d[item.RootRefHeaderSize:]) == "snap2"
			})
			snap := ondisk.ObjectID(ref.key.Offset)
			f, ok := e.tryFind(snap, isInode(sIFREG, func(d []byte) bool { return le64.Uint64(d[24:]) > 4096 }))
			if !ok {
				e.t.Fatalf("no file in snapshot %d", snap)
			}
			e.editItem(f, func(d []byte) { le64.PutUint64(d[24:], le64.Uint64(d[24:])-4096) })
			return target{key: &f.key}
		}},
	}
}

// TestKernelCorruption: damage to a kernel-made image with snapshots is
// found by both checkers, and ours names the place.
func TestKernelCorruption(t *testing.T) {
	needProgs(t)
	testutil.NeedRootLoop(t)
	img0 := filepath.Join(t.TempDir(), "k.img")
	kernelImage(t, img0, "compress=zstd", "")
	mustBeClean(t, img0, Options{})
	for _, cc := range kernelCorruptions() {
		t.Run(cc.name, func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "img")
			copyImage(t, img0, img)
			e := openEditor(t, img)
			want := cc.apply(e)
			e.dev.Close()
			rep := ourCheck(t, img, Options{})
			if !hasProblem(rep, cc.class, want) {
				t.Errorf("no %s problem at tree %s key %v; got %s", cc.class, ondisk.TreeName(want.tree), want.key, describe(rep))
			}
			if !rep.OK() {
				t.Logf("ours: %s", rep.Problems[0])
			}
			clean, out := progsCheck(t, img)
			switch {
			case cc.progsBlind != "":
				t.Logf("btrfs check clean=%v (expected blind: %s)", clean, cc.progsBlind)
			case clean:
				t.Errorf("btrfs check --readonly found no error:\n%s", out)
			}
		})
	}
}

// TestKernelLogTree: an image caught after fsync but before the
// transaction commits has a log tree; both checkers accept it, and damage
// to a log block is reported in the log tree.
func TestKernelLogTree(t *testing.T) {
	needProgs(t)
	testutil.NeedRootLoop(t)
	dir := t.TempDir()
	img, logRoot := kernelLogImage(t, dir)
	mustBeClean(t, img, Options{})

	bad := filepath.Join(dir, "bad.img")
	copyImage(t, img, bad)
	e := openEditor(t, bad)
	e.editBlock(logRoot, false, func(b []byte) { b[len(b)-100] ^= 1 })
	e.dev.Close()
	rep := ourCheck(t, bad, Options{})
	if !hasProblem(rep, ClassTree, target{tree: ondisk.TreeLogObjectID, block: logRoot}) {
		t.Errorf("damaged log root %d not reported: %s", logRoot, describe(rep))
	}
	clean, out := progsCheck(t, bad)
	t.Logf("btrfs check on the damaged log (clean=%v):\n%s", clean, out)
}

// kernelLogImage makes, in dir, an image caught after fsync but before the
// transaction commits: files fsynced into a log tree. It returns the image
// and its log root (the test is skipped if the kernel committed first).
func kernelLogImage(t *testing.T, dir string) (string, ondisk.LogicalAddr) {
	t.Helper()
	live := filepath.Join(dir, "live.img")
	mkfsImage(t, live, "", 1<<30)
	mnt := testutil.Mount(t, testutil.Loop(t, live), "commit=300")
	if err := os.WriteFile(filepath.Join(mnt, "committed"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sync").CombinedOutput(); err != nil {
		t.Fatalf("sync: %v %s", err, out)
	}
	for i := 0; i < 40; i++ {
		f, err := os.Create(filepath.Join(mnt, fmt.Sprintf("logged-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Write(make([]byte, 5000+i*1000))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	img := filepath.Join(dir, "log.img")
	copyImage(t, live, img) // the loop device's writes are in the file's page cache
	testutil.Unmount(t, mnt)

	e := openEditor(t, img)
	logRoot := e.fi.Super.LogRoot
	e.dev.Close()
	if logRoot == 0 {
		t.Skip("the kernel committed the transaction before the copy: no log tree")
	}
	return img, logRoot
}
