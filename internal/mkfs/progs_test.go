package mkfs

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// Helpers that run btrfs-progs and our own reader over images.

var le = binary.LittleEndian

// makeImage runs Make on a new sparse file.
func makeImage(t testing.TB, path string, size uint64, cfg Config) {
	t.Helper()
	testutil.SparseFile(t, path, int64(size))
	dev, err := blockdev.OpenFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	if err := Make(dev, cfg); err != nil {
		t.Fatalf("Make: %v", err)
	}
	checktest.AtEnd(t, path)
}

// btrfsCheck runs checktest.Image (our checker, btrfs check in the
// original mode) and btrfs check in the lowmem mode, and fails on any
// problem. It returns the "total tree bytes" btrfs check reports (0
// without btrfs-progs).
func btrfsCheck(t testing.TB, img string) uint64 {
	t.Helper()
	checktest.Image(t, img)
	var treeBytes uint64
	for _, line := range strings.Split(testutil.CheckImage(t, img, "--mode", "lowmem"), "\n") {
		if v, ok := strings.CutPrefix(line, "total tree bytes: "); ok {
			treeBytes, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	return treeBytes
}

// dumpSuper parses btrfs inspect-internal dump-super into field -> value.
func dumpSuper(t testing.TB, img string) map[string]string {
	t.Helper()
	out := testutil.Run(t, "btrfs", "inspect-internal", "dump-super", img)
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && !strings.HasPrefix(sc.Text(), "\t") {
			m[f[0]] = strings.Join(f[1:], " ")
		} else if len(f) == 1 {
			m[f[0]] = ""
		}
	}
	return m
}

// fsView is what the gobtrfs reader sees of an image.
type fsView struct {
	super   *ondisk.Superblock
	trees   []ondisk.ObjectID                     // every tree, sorted
	kinds   map[ondisk.ObjectID]map[string]int    // tree -> item type -> count
	blocks  int                                   // tree blocks in all trees
	chunks  []string                              // "logical length type phys..."
	extents []string                              // dev extents "phys length chunk"
	bgs     map[ondisk.LogicalAddr]blockGroupView // from the extent or block group tree
}

type blockGroupView struct{ length, used, flags uint64 }

// readImage opens img with fsinfo and walks every tree with ctree.Tree.Walk;
// any read error fails the test.
func readImage(t testing.TB, img string) *fsView {
	t.Helper()
	f := testimg.OpenFS(t, img)
	v := &fsView{super: f.Super, kinds: map[ondisk.ObjectID]map[string]int{},
		bgs: map[ondisk.LogicalAddr]blockGroupView{}}
	ids := []ondisk.ObjectID{ondisk.RootTreeObjectID, ondisk.ChunkTreeObjectID}
	err := f.RootTree.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, _ []byte) bool {
		if k.Type == ondisk.RootItemKey {
			ids = append(ids, k.ObjectID)
		}
		return true
	})
	if err != nil {
		t.Fatalf("root tree: %v", err)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	v.trees = ids
	for _, id := range ids {
		v.walkTree(t, f, id)
	}
	return v
}

func (v *fsView) walkTree(t testing.TB, f *fsinfo.FSInfo, id ondisk.ObjectID) {
	tr, err := f.Tree(id)
	if err != nil {
		t.Fatalf("tree %s: %v", ondisk.TreeName(id), err)
	}
	kinds := map[string]int{}
	v.kinds[id] = kinds
	err = tr.Walk(func(n *diskio.Node, err error) error {
		if err != nil {
			return fmt.Errorf("walk tree %s: %w", ondisk.TreeName(id), err)
		}
		v.blocks++
		if !n.IsLeaf() {
			return nil
		}
		for i := 0; i < n.NumItems(); i++ {
			v.noteItem(id, n.Key(i), n.ItemData(i))
			kinds[n.Key(i).Type.String()]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (v *fsView) noteItem(tree ondisk.ObjectID, k ondisk.Key, d []byte) {
	switch {
	case tree == ondisk.ChunkTreeObjectID && k.Type == ondisk.ChunkItemKey:
		c, _ := ondisk.DecodeChunk(d)
		s := fmt.Sprintf("%d %d %s", k.Offset, c.Length, typeString(c.Type))
		for _, st := range c.Stripes {
			s += fmt.Sprintf(" %d", st.Offset)
		}
		v.chunks = append(v.chunks, s)
	case tree == ondisk.DevTreeObjectID && k.Type == ondisk.DevExtentKey:
		v.extents = append(v.extents, fmt.Sprintf("%d %d %d", k.Offset, le.Uint64(d[24:]), le.Uint64(d[16:])))
	case k.Type == ondisk.BlockGroupItemKey:
		v.bgs[ondisk.LogicalAddr(k.ObjectID)] = blockGroupView{k.Offset, le.Uint64(d), le.Uint64(d[16:])}
	}
}

// progsImage makes an image with mkfs.btrfs for comparison.
func progsImage(t testing.TB, path string, size uint64, args ...string) {
	t.Helper()
	testutil.Mkfs(t, path, int64(size), args...)
}
