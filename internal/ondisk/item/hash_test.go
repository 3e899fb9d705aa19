package item

import (
	"strings"
	"testing"
)

// The expected values are key offsets read from images made by mkfs.btrfs
// 6.2 and Linux (dump-tree output).
func TestNameHash(t *testing.T) {
	for name, want := range map[string]uint64{
		"default": 2378154706, "a": 3427024844, "d": 4189400016, "link": 2885771098, "big": 3904007803,
	} {
		if got := NameHash([]byte(name)); got != want {
			t.Errorf("NameHash(%q) = %d, want %d", name, got, want)
		}
	}
}

func TestExtentDataRefHash(t *testing.T) {
	if got, want := ExtentDataRefHash(5, 284, 0), uint64(1007496931389616999); got != want {
		t.Errorf("ExtentDataRefHash(5, 284, 0) = %d, want %d", got, want)
	}
	r := ExtentDataRef{Root: 5, ObjectID: 284, Count: 1}
	if r.Hash() != 1007496931389616999 {
		t.Errorf("ExtentDataRef.Hash = %d", r.Hash())
	}
}

func TestExtrefHash(t *testing.T) {
	name := strings.Repeat("x", 200) + "68"
	if got, want := ExtrefHash(256, []byte(name)), uint64(7180827); got != want {
		t.Errorf("ExtrefHash = %d, want %d", got, want)
	}
}
