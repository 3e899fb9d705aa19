package txn_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// TestXattrInserts fills the fs tree of a fresh image with xattrs on the
// root directory over several commits, deletes half, and checks the image
// with btrfs check after each step and the items after reopening.
func TestXattrInserts(t *testing.T) {
	img := mkfs(t, 256<<20)
	r := rand.New(rand.NewSource(1))
	want := map[string][]byte{}
	for round := 0; round < 3; round++ {
		m := openImage(t, img)
		h := m.begin(t)
		tree, err := h.Tree(ondisk.FSTreeObjectID)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1500; i++ {
			name := fmt.Sprintf("user.r%d.%05d", round, i)
			v := randBytes(r, 20+r.Intn(200))
			setXattr(t, h, tree, 256, name, v)
			want[name] = v
			if i%500 == 499 {
				h.End()
				m.commit(t)
				h = m.begin(t)
			}
		}
		n := 0
		for name := range want {
			if n%2 == 0 {
				delXattr(t, h, tree, 256, name)
				delete(want, name)
			}
			n++
		}
		h.End()
		m.close(t)
		checktest.Image(t, img)
	}
	m := openImage(t, img)
	defer m.close(t)
	tree, err := m.fi.Tree(ondisk.FSTreeObjectID)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range want {
		data, ok, err := tree.Lookup(xattrKey(256, name))
		if err != nil || !ok {
			t.Fatalf("xattr %s: found %v err %v", name, ok, err)
		}
		if !bytes.HasSuffix(data, v) {
			t.Fatalf("xattr %s: wrong value", name)
		}
	}
}
