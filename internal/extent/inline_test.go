package extent

import (
	"math/rand"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/extent/delayedref"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

// TestInlineOrder inserts random refs where findInline says and checks the
// tree-checker's order: types ascending, then offsets (or data ref hashes)
// descending.
func TestInlineOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var refs []item.InlineRef
	for i := 0; i < 300; i++ {
		var ref delayedref.Ref
		switch r.Intn(4) {
		case 0:
			ref = delayedref.TreeRef(ondisk.ObjectID(r.Intn(1000)), 0)
		case 1:
			ref = delayedref.TreeRef(0, ondisk.LogicalAddr(r.Intn(1000)*4096))
		case 2:
			ref = delayedref.DataRef(ondisk.ObjectID(r.Intn(5)+5), ondisk.ObjectID(256+r.Intn(50)), uint64(r.Intn(10))*4096, 0)
		case 3:
			ref = delayedref.DataRef(0, 0, 0, ondisk.LogicalAddr(r.Intn(1000)*4096))
		}
		j, found := findInline(refs, ref)
		if found {
			if !matches(&refs[j], ref) {
				t.Fatalf("found %v at %d: %+v", ref, j, refs[j])
			}
			continue
		}
		refs = append(refs, item.InlineRef{})
		copy(refs[j+1:], refs[j:])
		refs[j] = refToInline(ref, 1)
	}
	for i := 1; i < len(refs); i++ {
		a, b := &refs[i-1], &refs[i]
		if a.Type > b.Type || a.Type == b.Type && inlineSeq(a) < inlineSeq(b) {
			t.Fatalf("out of order at %d: %+v then %+v", i, *a, *b)
		}
	}
}
