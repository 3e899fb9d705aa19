package scrub_test

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/scrub"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// TestScrubHugeExtent: a data EXTENT_ITEM whose length (its key offset)
// is a petabyte, patched into the extent tree with a fresh checksum.
// Scrub must end at once, reading no more than the block group holds,
// and report the extent, instead of stepping through the petabyte a MiB
// at a time.
func TestScrubHugeExtent(t *testing.T) {
	img := dupImage(t)
	p := hostile.Open(t, img)
	fi := p.Info()
	ext, err := fi.Tree(ondisk.ExtentTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	var victim ondisk.Key
	var keys []ondisk.Key
	ext.Range(ondisk.Key{}, ondisk.Key{ObjectID: ^ondisk.ObjectID(0), Type: 255, Offset: ^uint64(0)}, func(k ondisk.Key, d []byte) bool {
		keys = append(keys, k)
		return true
	})
	// the last data extent: no extent after it for the tree checker to
	// find overlapped
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if k.Type != ondisk.ExtentItemKey || (i+1 < len(keys) && keys[i+1].ObjectID == k.ObjectID) {
			continue
		}
		d, ok, err := ext.Lookup(k)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if e, err := item.DecodeExtentItem(d); err == nil && e.Flags&item.ExtentFlagData != 0 {
			victim = k
			break
		}
	}
	if victim.Type == 0 {
		t.Fatal("no data extent item to patch")
	}
	const huge = 1 << 50
	path, exact, err := ext.Search(victim)
	if err != nil || !exact {
		t.Fatal(exact, err)
	}
	slot := path.Slots[0]
	p.EditBlock(path.Leaf().Addr, func(b []byte) {
		binary.LittleEndian.PutUint64(b[ondisk.HeaderSize+slot*ondisk.ItemHeaderSize+9:], huge)
	})
	p.Close()

	done := make(chan *scrub.Report, 1)
	go func() { done <- runScrub(t, img, false) }()
	var rep *scrub.Report
	select {
	case rep = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("scrub of an image with a %d-byte extent item did not end within 30 s", uint64(huge))
	}
	if rep.DataBytes > 2*fi.Super.TotalBytes {
		t.Errorf("scrubbed %d data bytes, more than the image holds", rep.DataBytes)
	}
	all := strings.Join(rep.WalkErrors, "\n")
	for _, e := range rep.Errors {
		all += "\n" + e.String()
	}
	if !strings.Contains(all, "block group") || len(rep.WalkErrors)+rep.NumErrors > 10 {
		t.Errorf("the extent past its block group is not reported once: %d walk errors, %d errors:\n%.2000s", len(rep.WalkErrors), rep.NumErrors, all)
	}
}
