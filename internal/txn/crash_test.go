package txn_test

import (
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestCrashConsistency records every write and flush of a random workload
// and rebuilds the device as a crash would have left it at every flush,
// plus torn variants (a random part of the writes issued after that flush
// applied, each cut at a 4 KiB boundary): every such device must open at a
// committed generation, hold exactly that generation's files, and pass
// btrfs check.
func TestCrashConsistency(t *testing.T) {
	seed := testSeed(t)
	path := mkfs(t, 160<<20)
	base, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := blockdev.NewRecording(base)
	im := openDev(t, path, rec)
	r := rand.New(rand.NewSource(seed))
	m := newModel()
	m.commitProb = 8
	gens := map[ondisk.Generation]*model{im.fi.Super.Generation: m.clone()}
	m.beforeCommit = func(gen ondisk.Generation) { gens[gen] = m.clone() }
	ops := 120
	if testing.Short() {
		ops = 40
	}
	m.randomOps(t, im, r, ops, true)
	m.beforeCommit(im.fs.Transid())
	if err := im.fs.Close(); err != nil {
		t.Fatal(err)
	}
	flushes := rec.Flushes()
	t.Logf("%d operations recorded, %d flushes, %d committed generations", len(rec.Ops()), len(flushes), len(gens))
	scratch := filepath.Join(t.TempDir(), "crash.img")
	tr := rand.New(rand.NewSource(seed + 1))
	check := func(what string, dev *blockdev.Memory) {
		t.Helper()
		fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s: open: %v", what, err)
		}
		want := gens[fi.Super.Generation]
		if want == nil {
			t.Fatalf("%s: generation %d was never committed", what, fi.Super.Generation)
		}
		want.verify(t, &image{fi: fi})
		f, err := os.Create(scratch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dev.WriteTo(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if msg := checktest.Problems(scratch); msg != "" {
			t.Fatalf("%s (generation %d):\n%s", what, fi.Super.Generation, msg)
		}
	}
	for i, fl := range flushes {
		check("after flush "+itoa(i), rec.StateAt(fl+1))
		if !testing.Short() || i%3 == 0 {
			check("torn after flush "+itoa(i), rec.TornAt(fl+1, tr, 4096))
		}
	}
	check("before any flush, torn", rec.TornAt(0, tr, 4096))
}

func itoa(i int) string {
	return string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}
