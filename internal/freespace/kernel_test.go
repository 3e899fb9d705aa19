package freespace

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestKernelOracle lets Linux fragment a filesystem and checks our reading of
// its free space tree against its extent tree, and our layout choice against
// its. It needs root, loop devices and btrfs-progs.
//
// mkfs.btrfs (free space tree on by default), mount, write many small files,
// delete every other one, unmount; then for every block group:
//   - Load over the kernel's records (read with our tree reader; dump-tree
//     does not print bitmap data) equals the free space the extent tree
//     implies (parsed from `dump-tree -t extent`);
//   - extent_count is the number of those free extents;
//   - Build on that free list picks the kernel's layout, and its records
//     equal the kernel's byte for byte, for groups outside the [low, high]
//     band where the layout depends on history.
func TestKernelOracle(t *testing.T) {
	k := newKernelFS(t)
	const files = 6000
	k.mount()
	k.write(files)
	k.remove(files, func(i int) bool { return i%2 == 0 })
	k.unmount()
	phase1 := compareWithKernel(t, k.img)
	if len(phase1.bitmaps) == 0 {
		t.Fatal("the kernel converted no block group to bitmaps: the test did not fragment enough")
	}
	// Free most of the rest: the big data group's count drops below low and
	// the kernel converts it back to extents.
	k.mount()
	k.remove(files, func(i int) bool { return i%2 == 1 && i%50 != 1 })
	k.unmount()
	phase2 := compareWithKernel(t, k.img)
	back := 0
	for bg := range phase1.bitmaps {
		if !phase2.bitmaps[bg] {
			back++
		}
	}
	if back == 0 {
		t.Errorf("no block group went back from bitmaps to extents")
	}
}

type oracleStats struct{ bitmaps map[BlockGroup]bool }

// compareWithKernel checks our records code against the kernel's on img.
func compareWithKernel(t *testing.T, img string) oracleStats {
	t.Helper()
	super := dumpSuper(t, img)
	sector, nodesize := uint32(super["sectorsize"]), super["nodesize"]
	groups, used := extentTree(t, img, nodesize)
	if len(groups) == 0 {
		t.Fatal("no block group items in the dump")
	}

	// The kernel's free space tree, read by our reader, keys checked against dump-tree's.
	ed := readFreeSpaceTree(t, img)
	var ourKeys []ondisk.Key
	for _, it := range ed.items {
		ourKeys = append(ourKeys, it.Key)
	}
	if progsKeys := dumpKeys(t, img, "10"); !slices.Equal(ourKeys, progsKeys) {
		t.Fatalf("our reader saw %d free space tree items, dump-tree %d", len(ourKeys), len(progsKeys))
	}

	st := oracleStats{bitmaps: map[BlockGroup]bool{}}
	compared := 0
	for _, bg := range groups {
		want := freeOf(bg, used)
		got, err := Load(ed, bg, sector)
		if err != nil {
			t.Fatalf("block group %d: %v", uint64(bg.Start), err)
		}
		if err := sameExtents(got, want); err != nil {
			t.Fatalf("block group %d+%d: free space tree vs extent tree: %v", uint64(bg.Start), bg.Length, err)
		}
		info, err := ReadInfo(ed, bg)
		if err != nil {
			t.Fatal(err)
		}
		high, low := Thresholds(bg.Length, sector)
		built, err := Build(bg, want, sector)
		if err != nil {
			t.Fatal(err)
		}
		builtInfo, _ := DecodeInfo(built[0].Data)
		band := len(want) >= int(low) && len(want) <= int(high)
		t.Logf("block group %d+%d: %d free extents, high %d low %d, kernel bitmaps=%v, Build bitmaps=%v%s",
			uint64(bg.Start), bg.Length, len(want), high, low, info.UsingBitmaps(), builtInfo.UsingBitmaps(),
			map[bool]string{true: " (in the band: either layout)"}[band])
		if info.UsingBitmaps() {
			st.bitmaps[bg] = true
		}
		if band && info.UsingBitmaps() != builtInfo.UsingBitmaps() {
			continue
		}
		compared++
		if info.UsingBitmaps() != builtInfo.UsingBitmaps() {
			t.Errorf("block group %d: kernel bitmaps=%v, Build chose bitmaps=%v", uint64(bg.Start), info.UsingBitmaps(), builtInfo.UsingBitmaps())
			continue
		}
		if err := sameItems(groupItems(ed, bg), built); err != nil {
			t.Errorf("block group %d: Build's records differ from the kernel's: %v", uint64(bg.Start), err)
		}
	}
	t.Logf("%d block groups, %d in bitmaps, %d compared with Build", len(groups), len(st.bitmaps), compared)
	return st
}

// kernelFS is an image on a loop device that the test mounts and unmounts.
type kernelFS struct {
	t        *testing.T
	img, mnt string
	loop     string
}

// newKernelFS makes a fresh image on a loop device, or skips the test.
func newKernelFS(t *testing.T) *kernelFS {
	testutil.NeedRootLoop(t)
	k := &kernelFS{t: t, img: filepath.Join(t.TempDir(), "img")}
	testutil.Mkfs(t, k.img, 2<<30)
	k.loop = testutil.Loop(t, k.img)
	k.mount()
	k.unmount()
	return k
}

func (k *kernelFS) mount() { k.mnt = testutil.Mount(k.t, k.loop, "") }

// unmount unmounts and checks the image with btrfs check.
func (k *kernelFS) unmount() {
	testutil.Unmount(k.t, k.mnt)
	checktest.Image(k.t, k.img)
}

// write creates small files of 4, 8 and 12 KiB and syncs.
func (k *kernelFS) write(files int) {
	data := bytes.Repeat([]byte("gobtrfs free space tree "), 3*4096/24+1)
	for i := range files {
		size := 4096 * (1 + i%3)
		if err := os.WriteFile(filepath.Join(k.mnt, fmt.Sprintf("f%05d", i)), data[:size], 0o644); err != nil {
			k.t.Fatal(err)
		}
	}
	syscall.Sync()
}

// remove deletes the files that del picks and syncs.
func (k *kernelFS) remove(files int, del func(int) bool) {
	for i := range files {
		if del(i) {
			if err := os.Remove(filepath.Join(k.mnt, fmt.Sprintf("f%05d", i))); err != nil && !os.IsNotExist(err) {
				k.t.Fatal(err)
			}
		}
	}
	syscall.Sync()
}

// dumpSuper parses the numeric fields of dump-super.
func dumpSuper(t *testing.T, img string) map[string]uint64 {
	fields := map[string]uint64{}
	for _, line := range strings.Split(testutil.Run(t, "btrfs", "inspect-internal", "dump-super", img), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			if v, err := strconv.ParseUint(f[1], 0, 64); err == nil {
				fields[f[0]] = v
			}
		}
	}
	if fields["sectorsize"] == 0 || fields["nodesize"] == 0 {
		t.Fatal("dump-super: no sectorsize or nodesize")
	}
	return fields
}

var itemKeyRE = regexp.MustCompile(`^\s+item \d+ key \((\d+) (\S+) (\d+)\)`)

var typeByName = func() map[string]ondisk.ItemType {
	m := map[string]ondisk.ItemType{}
	for i := 0; i < 256; i++ {
		m[ondisk.ItemType(i).String()] = ondisk.ItemType(i)
	}
	return m
}()

// dumpKeys returns the leaf item keys dump-tree prints for a tree.
func dumpKeys(t *testing.T, img, tree string) []ondisk.Key {
	var keys []ondisk.Key
	sc := bufio.NewScanner(strings.NewReader(testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", tree, img)))
	for sc.Scan() {
		m := itemKeyRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		typ, ok := typeByName[m[2]]
		if !ok {
			t.Fatalf("dump-tree: unknown item type %q", m[2])
		}
		obj, _ := strconv.ParseUint(m[1], 10, 64)
		off, _ := strconv.ParseUint(m[3], 10, 64)
		keys = append(keys, ondisk.Key{ObjectID: ondisk.ObjectID(obj), Type: typ, Offset: off})
	}
	return keys
}

// extentTree returns the block groups and the used ranges (extent and
// metadata items) from dump-tree's text.
func extentTree(t *testing.T, img string, nodesize uint64) ([]BlockGroup, []Extent) {
	var groups []BlockGroup
	var used []Extent
	for _, k := range dumpKeys(t, img, "extent") {
		switch k.Type {
		case ondisk.BlockGroupItemKey:
			groups = append(groups, BlockGroup{ondisk.LogicalAddr(k.ObjectID), k.Offset})
		case ondisk.ExtentItemKey:
			used = append(used, Extent{ondisk.LogicalAddr(k.ObjectID), k.Offset})
		case ondisk.MetadataItemKey:
			used = append(used, Extent{ondisk.LogicalAddr(k.ObjectID), nodesize})
		}
	}
	if len(groups) == 0 { // block group tree
		for _, k := range dumpKeys(t, img, "block-group") {
			if k.Type == ondisk.BlockGroupItemKey {
				groups = append(groups, BlockGroup{ondisk.LogicalAddr(k.ObjectID), k.Offset})
			}
		}
	}
	return groups, used
}

// freeOf is the group's space not covered by used ranges (sorted), merged.
func freeOf(bg BlockGroup, used []Extent) []Extent {
	var out []Extent
	cur := bg.Start
	end := bg.Start + ondisk.LogicalAddr(bg.Length)
	for _, u := range used {
		if u.End() <= bg.Start || u.Start >= end {
			continue
		}
		if u.Start > cur {
			out = append(out, Extent{cur, uint64(u.Start - cur)})
		}
		cur = max(cur, u.End())
	}
	if cur < end {
		out = append(out, Extent{cur, uint64(end - cur)})
	}
	return out
}

// readFreeSpaceTree copies the image's free space tree into a memEditor.
func readFreeSpaceTree(t *testing.T, img string) *memEditor {
	tree, err := testimg.OpenFS(t, img).Tree(ondisk.FreeSpaceTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	ed := &memEditor{}
	err = tree.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, d []byte) bool {
		ed.items = append(ed.items, Item{k, append([]byte(nil), d...)})
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return ed
}

// groupItems returns the group's info item and records.
func groupItems(ed *memEditor, bg BlockGroup) []Item {
	var out []Item
	max := ondisk.Key{ObjectID: ondisk.ObjectID(uint64(bg.Start) + bg.Length - 1), Type: 0xff, Offset: ^uint64(0)}
	ed.Range(InfoKey(bg), max, func(k ondisk.Key, d []byte) bool {
		out = append(out, Item{k, d})
		return true
	})
	return out
}
