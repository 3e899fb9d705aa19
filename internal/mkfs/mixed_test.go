package mkfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestMixedBGMkfs makes mixed images (the mixed-bg feature, mkfs.btrfs
// --mixed) of several sizes, single and DUP, and compares them with what
// mkfs.btrfs --mixed makes of the same size: the same chunks (one
// DATA|METADATA chunk where the metadata and data ones would be) at the same
// logical and device offsets, the same dev extents, block groups, feature
// flags, nodesize (the sectorsize), bytes used and item kinds per tree.
// Both checkers find ours clean, and Linux mounts it and writes to it.
func TestMixedBGMkfs(t *testing.T) {
	testutil.NeedProgs(t)
	mixed, err := ParseFeatures("mixed-bg", Features{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		size    uint64
		profile string
	}{
		{40 << 20, "single"}, {128 << 20, "single"}, {1 << 30, "single"}, {10 << 30, "single"},
		{256 << 20, "dup"}, {1 << 30, "dup"},
	} {
		t.Run(fmt.Sprintf("%s/%s", sizeName(c.size), c.profile), func(t *testing.T) {
			dir := t.TempDir()
			ours, theirs := filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
			makeImage(t, ours, c.size, Config{Features: mixed, MetadataProfile: c.profile, DataProfile: c.profile})
			btrfsCheck(t, ours)
			progsImage(t, theirs, c.size, "--mixed", "-m", c.profile, "-d", c.profile)
			o, p := readImage(t, ours), readImage(t, theirs)
			if !slices.Equal(o.chunks, p.chunks) {
				t.Errorf("chunks differ from mkfs.btrfs:\n ours   %q\n theirs %q", o.chunks, p.chunks)
			}
			if !slices.Equal(o.extents, p.extents) {
				t.Errorf("dev extents differ from mkfs.btrfs:\n ours   %q\n theirs %q", o.extents, p.extents)
			}
			if fmt.Sprint(o.bgs) != fmt.Sprint(p.bgs) {
				t.Errorf("block groups differ from mkfs.btrfs:\n ours   %v\n theirs %v", o.bgs, p.bgs)
			}
			for _, f := range []struct {
				name      string
				ours, prg uint64
			}{
				{"total_bytes", o.super.TotalBytes, p.super.TotalBytes}, {"bytes_used", o.super.BytesUsed, p.super.BytesUsed},
				{"incompat", o.super.IncompatFlags, p.super.IncompatFlags}, {"compat_ro", o.super.CompatROFlags, p.super.CompatROFlags},
				{"nodesize", uint64(o.super.NodeSize), uint64(p.super.NodeSize)},
				{"dev bytes_used", o.super.DevItem.BytesUsed, p.super.DevItem.BytesUsed},
				{"sys_array_size", uint64(o.super.SysChunkArraySize), uint64(p.super.SysChunkArraySize)},
			} {
				if f.ours != f.prg {
					t.Errorf("superblock %s: ours %d, mkfs.btrfs %d", f.name, f.ours, f.prg)
				}
			}
			if o.super.IncompatFlags&ondisk.IncompatMixedGroups == 0 {
				t.Errorf("incompat flags %#x lack MIXED_GROUPS", o.super.IncompatFlags)
			}
			if !slices.Equal(o.trees, p.trees) {
				t.Errorf("trees differ: ours %v, mkfs.btrfs %v", o.trees, p.trees)
			}
			for _, id := range p.trees {
				if d := kindDiff(o.kinds[id], p.kinds[id]); d != "" {
					t.Errorf("tree %s item kinds differ from mkfs.btrfs: %s", ondisk.TreeName(id), d)
				}
			}
			if !testutil.HaveRootLoop() {
				return
			}
			mnt := testutil.LoopMount(t, ours, "")
			if err := os.WriteFile(filepath.Join(mnt, "f"), make([]byte, 3<<20), 0o644); err != nil {
				t.Fatalf("Linux writes to our mixed image: %v", err)
			}
			testutil.Unmount(t, mnt)
			btrfsCheck(t, ours)
		})
	}
}
