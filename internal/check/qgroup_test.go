package check

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// qgroupKey is the QGROUP_INFO key of a qgroup.
func qgroupKey(level uint16, subvol uint64) ondisk.Key {
	return ondisk.Key{Type: ondisk.QgroupInfoKey, Offset: uint64(level)<<48 | subvol}
}

func editQgroupInfo(e *editor, k ondisk.Key, fn func(d []byte)) {
	e.t.Helper()
	f := e.find(ondisk.QuotaTreeObjectID, func(kk ondisk.Key, d []byte) bool { return kk == k })
	e.editItem(f, fn)
}

func setQgroupStatusFlags(e *editor, flags uint64) {
	e.t.Helper()
	f := e.find(ondisk.QuotaTreeObjectID, func(k ondisk.Key, d []byte) bool { return k.Type == ondisk.QgroupStatusKey })
	e.editItem(f, func(d []byte) { le64.PutUint64(d[16:], le64.Uint64(d[16:])|flags) })
}

// runCorruptions applies each damage to a copy of img0 and compares both
// checkers' verdicts with what the case says.
func runCorruptions(t *testing.T, img0 string, cases []corruption) {
	for _, cc := range cases {
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
			case cc.progsBlind != "" && clean:
				t.Logf("btrfs check finds it clean, as expected: %s", cc.progsBlind)
			case cc.progsBlind != "":
				t.Logf("btrfs check noticed it too:\n%s", out)
			case clean:
				t.Errorf("btrfs check --readonly found no error:\n%s", out)
			}
		})
	}
}

// skippedQgroups damages a counter and marks the status so that both
// checkers must skip the counters (btrfs-progs fsck-tests/022, 036).
func skippedQgroups(t *testing.T, img0 string, flag uint64, why string) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	copyImage(t, img0, img)
	e := openEditor(t, img)
	editQgroupInfo(e, qgroupKey(0, 5), func(d []byte) { le64.PutUint64(d[8:], le64.Uint64(d[8:])+4096) })
	setQgroupStatusFlags(e, flag)
	e.dev.Close()
	rep := mustBeClean(t, img, Options{})
	if !strings.Contains(strings.Join(rep.Warnings, "\n"), why) {
		t.Errorf("no warning %q that the counters were skipped; warnings: %q", why, rep.Warnings)
	}
}

// TestQgroupCounters: mkfs.btrfs -R quota writes right counters; a wrong
// one is found by both checkers, an item out of place by ours; a status
// that says rescan or inconsistent makes both skip the counters.
func TestQgroupCounters(t *testing.T) {
	needProgs(t)
	img0 := filepath.Join(t.TempDir(), "quota.img")
	mkfsImage(t, img0, source(t), 256<<20, "-R", "quota")
	rep := mustBeClean(t, img0, Options{})
	if len(rep.Warnings) > 0 && strings.Contains(strings.Join(rep.Warnings, "\n"), "qgroup") {
		t.Errorf("qgroup warnings on a clean image: %q", rep.Warnings)
	}
	quota := ondisk.QuotaTreeObjectID
	runCorruptions(t, img0, []corruption{
		{name: "referenced", class: ClassQgroup, apply: func(e *editor) target {
			// btrfs-progs fsck-tests/032
			k := qgroupKey(0, 5)
			editQgroupInfo(e, k, func(d []byte) { le64.PutUint64(d[8:], le64.Uint64(d[8:])+4096) })
			return target{tree: quota, key: &k}
		}},
		{name: "exclusive", class: ClassQgroup, apply: func(e *editor) target {
			k := qgroupKey(0, 5)
			editQgroupInfo(e, k, func(d []byte) { le64.PutUint64(d[24:], le64.Uint64(d[24:])-4096) })
			return target{tree: quota, key: &k}
		}},
		{name: "limit-without-info", class: ClassQgroup, progsBlind: "btrfs check 6.2 reads only info and relation items", apply: func(e *editor) target {
			k := ondisk.Key{Type: ondisk.QgroupLimitKey, Offset: 300}
			e.insertItem(quota, k, make([]byte, item.QgroupLimitSize))
			return target{tree: quota, key: &k}
		}},
	})
	t.Run("rescan-running", func(t *testing.T) {
		skippedQgroups(t, img0, item.QgroupStatusFlagRescan, "rescan is in progress")
	})
	t.Run("inconsistent", func(t *testing.T) {
		skippedQgroups(t, img0, item.QgroupStatusFlagInconsistent, "inconsistent")
	})
}

// TestKernelQgroups: a kernel-made image with quotas, snapshots (shared
// extents: exclusive counts matter) and a level-1 qgroup holding two
// subvolumes is clean for both checkers; a wrong counter of the level-1
// group or of a snapshot is found by both.
func TestKernelQgroups(t *testing.T) {
	needProgs(t)
	testutil.NeedRootLoop(t)
	img0 := filepath.Join(t.TempDir(), "k.img")
	kernelImage(t, img0, "", `
btrfs quota enable .
btrfs qgroup create 1/100 .
btrfs qgroup assign 0/5 1/100 . 2>/dev/null || true
btrfs qgroup assign 0/$(btrfs inspect-internal rootid sv) 1/100 . 2>/dev/null || true
sync
btrfs quota rescan -W . >/dev/null 2>&1 || true # a rescan the assignment started
btrfs quota rescan -w . >/dev/null
sync
`)
	mustBeClean(t, img0, Options{})
	probe := filepath.Join(t.TempDir(), "probe.img") // img0 stays attached to its loop device
	copyImage(t, img0, probe)
	e := openEditor(t, probe)
	snap := e.find(ondisk.RootTreeObjectID, func(k ondisk.Key, d []byte) bool {
		return k.Type == ondisk.RootRefKey && string(d[item.RootRefHeaderSize:]) == "snap1"
	}).key.Offset
	e.dev.Close()
	quota := ondisk.QuotaTreeObjectID
	runCorruptions(t, img0, []corruption{
		{name: "level1-exclusive", class: ClassQgroup, apply: func(e *editor) target {
			k := qgroupKey(1, 100)
			editQgroupInfo(e, k, func(d []byte) { le64.PutUint64(d[24:], le64.Uint64(d[24:])+16384) })
			return target{tree: quota, key: &k}
		}},
		{name: "snapshot-referenced", class: ClassQgroup, apply: func(e *editor) target {
			k := qgroupKey(0, snap)
			editQgroupInfo(e, k, func(d []byte) { le64.PutUint64(d[8:], le64.Uint64(d[8:])-16384) })
			return target{tree: quota, key: &k}
		}},
	})
}
