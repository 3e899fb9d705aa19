package blockdev

import (
	"bytes"
	"math/rand"
	"testing"
)

// TestOverlay writes through an overlay at random offsets and lengths: reads
// see the writes over the base everywhere, and the base is never changed.
func TestOverlay(t *testing.T) {
	const size = 5*overlayPage + 123
	base := NewMemory(size)
	rng := rand.New(rand.NewSource(1))
	rng.Read(base.Bytes())
	orig := append([]byte(nil), base.Bytes()...)
	model := append([]byte(nil), orig...)
	o := NewOverlay(base)
	for i := 0; i < 200; i++ {
		off := rng.Intn(size)
		n := rng.Intn(min(size-off, 2*overlayPage) + 1)
		p := make([]byte, n)
		rng.Read(p)
		if _, err := o.WriteAt(p, int64(off)); err != nil {
			t.Fatalf("write %d+%d: %v", off, n, err)
		}
		copy(model[off:], p)
		roff := rng.Intn(size)
		r := make([]byte, rng.Intn(size-roff+1))
		if k, err := o.ReadAt(r, int64(roff)); err != nil || k != len(r) {
			t.Fatalf("read %d+%d: %d, %v", roff, len(r), k, err)
		}
		if !bytes.Equal(r, model[roff:roff+len(r)]) {
			t.Fatalf("read %d+%d after %d writes differs from the model", roff, len(r), i+1)
		}
	}
	if !bytes.Equal(base.Bytes(), orig) {
		t.Fatal("the overlay wrote to its base")
	}
	if _, err := o.WriteAt([]byte{1}, size); err == nil {
		t.Error("a write past the end succeeded")
	}
}
