package blockdev

import (
	"bytes"
	"math/rand"
	"testing"
)

func TestRecording(t *testing.T) {
	r := NewRecording(make([]byte, 64<<10))
	r.WriteAt(bytes.Repeat([]byte{1}, 8192), 0)
	r.Flush()
	r.WriteAt(bytes.Repeat([]byte{2}, 8192), 0)
	r.WriteAt(bytes.Repeat([]byte{3}, 4096), 16384)
	r.Flush()
	if f := r.Flushes(); len(f) != 2 || f[0] != 1 || f[1] != 4 {
		t.Fatalf("flushes %v", f)
	}
	b := make([]byte, 1)
	r.StateAt(2).ReadAt(b, 0)
	if b[0] != 1 {
		t.Fatalf("state after first flush: %d", b[0])
	}
	r.ReadAt(b, 0)
	if b[0] != 2 {
		t.Fatalf("current state: %d", b[0])
	}
	seen := map[string]bool{}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		m := r.TornAt(2, rng, 4096)
		var p [3]byte
		m.ReadAt(p[0:1], 0)
		m.ReadAt(p[1:2], 4096)
		m.ReadAt(p[2:3], 16384)
		if p[0] == 1 && p[1] == 2 {
			t.Fatalf("torn write applied its second sector without the first")
		}
		seen[string(p[:])] = true
	}
	if len(seen) < 4 {
		t.Fatalf("torn variants too few: %v", seen)
	}
	if _, err := r.WriteAt([]byte{1}, 64<<10); err == nil {
		t.Fatal("write past the end accepted")
	}
}
