package diskio

import (
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestRelocTreeOfDataRelocTree: older kernels made reloc trees for the
// data reloc tree too (btrfs-progs fsck-tests/020 tree_reloc_for_data_reloc,
// clean for btrfs check): the root tree leaf holding its ROOT_ITEM is
// valid; a reloc tree for a global tree is not.
func TestRelocTreeOfDataRelocTree(t *testing.T) {
	for _, c := range []struct {
		of ondisk.ObjectID
		ok bool
	}{{ondisk.DataRelocTreeObjectID, true}, {ondisk.FSTreeObjectID, true}, {ondisk.ExtentTreeObjectID, false}} {
		k := key(ondisk.TreeRelocObjectID, ondisk.RootItemKey, uint64(c.of))
		n := &Node{Addr: fuzzLogical, Data: testLeaf(ondisk.RootTreeObjectID, testItem{k, rootItemBytes(1<<20, 0, 0)})}
		if err := checkNode(n, fuzzFSID, Expect{Level: -1}); err != nil {
			t.Fatalf("structural check: %v", err)
		}
		if err := testRules.checkItems(n); (err == nil) != c.ok {
			t.Errorf("reloc tree of %s: got %v, want ok=%v", ondisk.TreeName(c.of), err, c.ok)
		}
	}
}
