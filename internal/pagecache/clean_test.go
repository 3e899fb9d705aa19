package pagecache

import (
	"reflect"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

func TestCleanRanges(t *testing.T) {
	c := New(nil, 0)
	k := ondisk.InodeRef{Root: 5, Ino: 257}
	if got := c.CleanRanges(k, 0, 100); !reflect.DeepEqual(got, [][2]int64{{0, 100}}) {
		t.Fatalf("no dirty data: %v", got)
	}
	c.Write(k, 10, make([]byte, 10)) // [10, 20)
	c.Write(k, 40, make([]byte, 20)) // [40, 60)
	for _, tc := range []struct {
		off, n int64
		want   [][2]int64
	}{
		{0, 100, [][2]int64{{0, 10}, {20, 40}, {60, 100}}},
		{10, 10, nil},
		{12, 30, [][2]int64{{20, 40}}},
		{45, 10, nil},
		{50, 20, [][2]int64{{60, 70}}},
	} {
		if got := c.CleanRanges(k, tc.off, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("CleanRanges(%d, %d) = %v, want %v", tc.off, tc.n, got, tc.want)
		}
	}
}
