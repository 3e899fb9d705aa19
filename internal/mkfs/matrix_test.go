package mkfs

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// combo is one point of the test matrix.
type combo struct {
	csum     csum.Type
	nodesize uint32
	meta     string
	size     uint64
	bgt      bool
}

func (c combo) String() string {
	return fmt.Sprintf("%s/n%d/%s/%s/bgt=%v", c.csum, c.nodesize, c.meta, sizeName(c.size), c.bgt)
}

func sizeName(n uint64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%dG", n>>30)
	}
	return fmt.Sprintf("%dM", n>>20)
}

func (c combo) config() Config {
	feats := DefaultFeatures()
	if c.bgt {
		feats.CompatRO |= ondisk.CompatROBlockGroupTree
	}
	return Config{Csum: c.csum, NodeSize: c.nodesize, MetadataProfile: c.meta, Features: feats,
		FSID: RandomUUID(), Label: "gobtrfs-" + c.meta}
}

// matrix is every combination of checksum, nodesize, metadata profile, size
// and block group tree; -short keeps a covering subset (each value of each
// dimension at least once).
func matrix(short bool) []combo {
	csums := []csum.Type{csum.CRC32C, csum.XXHash, csum.SHA256, csum.Blake2}
	nodes := []uint32{4096, 16384, 65536}
	metas := []string{"dup", "single"}
	sizes := []uint64{128 << 20, 1 << 30, 10 << 30}
	var out []combo
	i := 0
	for _, cs := range csums {
		for _, n := range nodes {
			for _, m := range metas {
				for _, s := range sizes {
					for _, bgt := range []bool{false, true} {
						i++
						if short && i%11 != 0 {
							continue
						}
						out = append(out, combo{cs, n, m, s, bgt})
					}
				}
			}
		}
	}
	return out
}

// TestMatrix makes an image for every combo and checks it four ways:
// btrfs check --readonly is clean; dump-super shows what we asked for; the
// gobtrfs reader opens it and walks every tree; and, for combos mkfs.btrfs
// 6.2 can make (it has no block-group-tree), the chunk layout, dev extents,
// block groups, superblock fields, trees and item kinds equal mkfs.btrfs's.
// As root with loop devices, the kernel then mounts and uses each image.
func TestMatrix(t *testing.T) {
	testutil.NeedProgs(t)
	kernel := testutil.HaveRootLoop()
	if !kernel {
		t.Log("kernel part skipped: needs root, loop devices and btrfs support")
	}
	for _, c := range matrix(testing.Short()) {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			img := filepath.Join(dir, "gobtrfs.img")
			cfg := c.config()
			start := time.Now()
			makeImage(t, img, c.size, cfg)
			t.Logf("Make took %v", time.Since(start))
			v := readImage(t, img)
			treeBytes := btrfsCheck(t, img)
			if want := uint64(v.blocks) * uint64(c.nodesize); treeBytes != want {
				t.Errorf("btrfs check found %d tree bytes, the reader walked %d blocks (%d bytes)", treeBytes, v.blocks, want)
			}
			checkSuper(t, img, c, cfg, v)
			if !c.bgt {
				compareWithProgs(t, filepath.Join(dir, "progs.img"), c, v)
			}
			if kernel {
				kernelRoundTrip(t, img)
			}
		})
	}
}

// checkSuper compares dump-super's fields with what Make was asked for.
func checkSuper(t *testing.T, img string, c combo, cfg Config, v *fsView) {
	t.Helper()
	r, err := Resolve(cfg, c.size)
	if err != nil {
		t.Fatal(err)
	}
	devUsed := uint64(0)
	sysArray := 0
	for _, ch := range r.Chunks {
		devUsed += ch.Length * uint64(len(ch.Physical))
		if ch.Type&ondisk.BlockGroupSystem != 0 {
			sysArray += ondisk.KeySize + ondisk.ChunkItemSize + ondisk.StripeSize*len(ch.Physical)
		}
	}
	roFlags := "0x3"
	if c.bgt {
		roFlags = "0xb"
	}
	want := map[string]string{
		"csum_type": fmt.Sprintf("%d (%s)", c.csum, c.csum), "generation": "1", "chunk_root_generation": "1",
		"total_bytes": fmt.Sprint(c.size), "bytes_used": fmt.Sprint(v.blocks * int(c.nodesize)),
		"sectorsize": "4096", "nodesize": fmt.Sprint(c.nodesize), "stripesize": "4096", "num_devices": "1",
		"root_dir": "6", "compat_flags": "0x0", "compat_ro_flags": roFlags, "incompat_flags": "0x341",
		"cache_generation": "0", "uuid_tree_generation": "1", "dev_item.bytes_used": fmt.Sprint(devUsed),
		"dev_item.total_bytes": fmt.Sprint(c.size), "dev_item.devid": "1", "fsid": cfg.FSID.String(),
		"label": cfg.Label, "sys_array_size": fmt.Sprint(sysArray), "log_root": "0",
	}
	got := dumpSuper(t, img)
	if c.csum == csum.Blake2 {
		want["csum_type"] = "3 (blake2)" // btrfs-progs' name
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("dump-super %s = %q, want %q", k, got[k], w)
		}
	}
	if !strings.HasSuffix(got["csum"], "[match]") {
		t.Errorf("dump-super csum %q does not match", got["csum"])
	}
}

// compareWithProgs makes the same filesystem with mkfs.btrfs and compares.
func compareWithProgs(t *testing.T, path string, c combo, ours *fsView) {
	t.Helper()
	progsImage(t, path, c.size, "--csum", c.csum.String(), "-n", fmt.Sprint(c.nodesize), "-m", c.meta, "-d", "single")
	theirs := readImage(t, path)
	if !slices.Equal(ours.chunks, theirs.chunks) {
		t.Errorf("chunks differ from mkfs.btrfs:\n ours   %q\n theirs %q", ours.chunks, theirs.chunks)
	}
	if !slices.Equal(ours.extents, theirs.extents) {
		t.Errorf("dev extents differ from mkfs.btrfs:\n ours   %q\n theirs %q", ours.extents, theirs.extents)
	}
	if fmt.Sprint(ours.bgs) != fmt.Sprint(theirs.bgs) {
		t.Errorf("block groups differ from mkfs.btrfs:\n ours   %v\n theirs %v", ours.bgs, theirs.bgs)
	}
	o, p := ours.super, theirs.super
	for _, f := range []struct {
		name      string
		ours, prg uint64
	}{
		{"total_bytes", o.TotalBytes, p.TotalBytes}, {"bytes_used", o.BytesUsed, p.BytesUsed},
		{"incompat", o.IncompatFlags, p.IncompatFlags}, {"compat_ro", o.CompatROFlags, p.CompatROFlags},
		{"csum_type", uint64(o.CsumType), uint64(p.CsumType)}, {"sys_array_size", uint64(o.SysChunkArraySize), uint64(p.SysChunkArraySize)},
		{"dev bytes_used", o.DevItem.BytesUsed, p.DevItem.BytesUsed}, {"cache_generation", o.CacheGeneration, p.CacheGeneration},
		{"root_level", uint64(o.RootLevel), uint64(p.RootLevel)}, {"stripesize", uint64(o.StripeSize), uint64(p.StripeSize)},
	} {
		if f.ours != f.prg {
			t.Errorf("superblock %s: ours %d, mkfs.btrfs %d", f.name, f.ours, f.prg)
		}
	}
	if !slices.Equal(ours.trees, theirs.trees) {
		t.Errorf("trees differ: ours %v, mkfs.btrfs %v", ours.trees, theirs.trees)
	}
	for _, id := range theirs.trees {
		if d := kindDiff(ours.kinds[id], theirs.kinds[id]); d != "" {
			t.Errorf("tree %s item kinds differ from mkfs.btrfs: %s", ondisk.TreeName(id), d)
		}
		if d := countDiff(ours.kinds[id], theirs.kinds[id]); d != "" {
			t.Logf("tree %s item counts (ours vs mkfs.btrfs): %s%s", ondisk.TreeName(id), d, explainCount(id, c))
		}
	}
}

func kindDiff(ours, theirs map[string]int) string {
	var d []string
	for k := range theirs {
		if _, ok := ours[k]; !ok {
			d = append(d, "missing "+k)
		}
	}
	for k := range ours {
		if _, ok := theirs[k]; !ok {
			d = append(d, "extra "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

func countDiff(ours, theirs map[string]int) string {
	var d []string
	for k, n := range theirs {
		if ours[k] != n {
			d = append(d, k+" "+strconv.Itoa(ours[k])+" vs "+strconv.Itoa(n))
		}
	}
	sort.Strings(d)
	return strings.Join(d, ", ")
}

func explainCount(id ondisk.ObjectID, c combo) string {
	if id == ondisk.FreeSpaceTreeObjectID && c.meta == "dup" {
		return " (mkfs.btrfs 6.2 leaves FREE_SPACE_INFO/EXTENT records of the temporary chunks it removed;" +
			" ours has one record set per existing block group, and one free run where its blocks are packed)"
	}
	if id == ondisk.FreeSpaceTreeObjectID {
		return " (mkfs.btrfs's COWs leave holes between its blocks; ours are packed, one free run per block group)"
	}
	return ""
}

// TestLayoutVsProgsSizes compares chunk placement with mkfs.btrfs over sizes
// that move its allocator's limits: the minimum sizes, chunks capped at 10%
// of the filesystem (under 80 MiB for single, under 2.5 GiB for DUP
// metadata), the 32 MiB floor of DUP metadata, and 1 GiB metadata chunks
// above 50 GiB.
func TestLayoutVsProgsSizes(t *testing.T) {
	testutil.NeedProgs(t)
	const M = 1 << 20
	cases := []struct {
		meta  string
		sizes []uint64
	}{
		{"dup", []uint64{109 * M, 110 * M, 200 * M, 300 * M, 513 * M, 2560 * M, 3 << 30, 51 << 30, 100 << 30}},
		{"single", []uint64{45 * M, 50 * M, 60 * M, 79 * M, 80 * M, 100 * M, 51 << 30}},
	}
	for _, c := range cases {
		for _, size := range c.sizes {
			t.Run(c.meta+"/"+sizeName(size), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				ours, theirs := filepath.Join(dir, "ours.img"), filepath.Join(dir, "progs.img")
				makeImage(t, ours, size, Config{MetadataProfile: c.meta})
				btrfsCheck(t, ours)
				progsImage(t, theirs, size, "-m", c.meta)
				o, p := readImage(t, ours), readImage(t, theirs)
				if !slices.Equal(o.chunks, p.chunks) || !slices.Equal(o.extents, p.extents) {
					t.Errorf("layout differs from mkfs.btrfs:\n ours   %q %q\n theirs %q %q", o.chunks, o.extents, p.chunks, p.extents)
				}
			})
		}
	}
}

// TestFeatureVariants turns the default features off (and on) one way or
// another: the old EXTENT_ITEM with tree_block_info instead of skinny
// METADATA_ITEMs, no free space tree (v1 cache invalidated), no extref or
// no-holes, and block-group-tree with full extent items.
func TestFeatureVariants(t *testing.T) {
	testutil.NeedProgs(t)
	kernel := testutil.HaveRootLoop()
	cases := []struct {
		features string
		progs    []string // the same with mkfs.btrfs 6.2; nil if it cannot
	}{
		{"^skinny-metadata", []string{"-O", "^skinny-metadata"}},
		{"^free-space-tree", []string{"-R", "^free-space-tree"}},
		{"^extref,^no-holes", []string{"-O", "^extref,^no-holes"}},
		{"^skinny-metadata,^free-space-tree,^no-holes", []string{"-O", "^skinny-metadata,^no-holes", "-R", "^free-space-tree"}},
		{"^skinny-metadata,block-group-tree", nil},
	}
	for _, c := range cases {
		t.Run(c.features, func(t *testing.T) {
			t.Parallel()
			feats, err := ParseFeatures(c.features, Features{})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			img := filepath.Join(dir, "ours.img")
			makeImage(t, img, 1<<30, Config{Features: feats, NodeSize: 4096})
			v := readImage(t, img)
			btrfsCheck(t, img)
			if got := v.super.IncompatFlags; got != feats.Incompat {
				t.Errorf("incompat %#x, want %#x", got, feats.Incompat)
			}
			wantCache := uint64(0)
			if feats.CompatRO&ondisk.CompatROFreeSpaceTree == 0 {
				wantCache = ^uint64(0)
			}
			if v.super.CacheGeneration != wantCache {
				t.Errorf("cache_generation %#x, want %#x", v.super.CacheGeneration, wantCache)
			}
			if c.progs != nil {
				theirs := filepath.Join(dir, "progs.img")
				progsImage(t, theirs, 1<<30, append(c.progs, "-n", "4096")...)
				p := readImage(t, theirs)
				if !slices.Equal(v.trees, p.trees) {
					t.Errorf("trees: ours %v, mkfs.btrfs %v", v.trees, p.trees)
				}
				for _, id := range p.trees {
					if d := kindDiff(v.kinds[id], p.kinds[id]); d != "" {
						t.Errorf("tree %s item kinds differ from mkfs.btrfs: %s", ondisk.TreeName(id), d)
					}
				}
				if v.super.IncompatFlags != p.super.IncompatFlags || v.super.CompatROFlags != p.super.CompatROFlags {
					t.Errorf("flags %#x/%#x, mkfs.btrfs %#x/%#x", v.super.IncompatFlags, v.super.CompatROFlags,
						p.super.IncompatFlags, p.super.CompatROFlags)
				}
			}
			if kernel {
				kernelRoundTrip(t, img)
			}
		})
	}
}
