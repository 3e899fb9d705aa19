package treelog_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestRedteamBigExtentsCsums: one large extent (its checksums span
// several leaves) written and fsync'd, on filesystems with each checksum
// type and with 4 KiB nodes. Exploratory: GOBTRFS_REDTEAM=1.
func TestRedteamBigExtentsCsums(t *testing.T) {
	if os.Getenv("GOBTRFS_REDTEAM") == "" {
		t.Skip("exploratory: set GOBTRFS_REDTEAM=1")
	}
	testutil.NeedProgs(t)
	for _, args := range [][]string{{"--csum", "crc32c"}, {"--csum", "sha256"}, {"--csum", "xxhash"}, {"--csum", "blake2"}, {"-n", "4096"}} {
		t.Run(args[1], func(t *testing.T) {
			img := filepath.Join(t.TempDir(), "img")
			testutil.Mkfs(t, img, 512<<20, args...)
			f, err := fsops.OpenImage(img, fsops.Options{})
			mustT(t, err)
			t.Cleanup(func() { f.Close() })
			b := create(t, f, topDir, "b", nil)
			write(t, f, b, 0, make([]byte, 96<<20))
			mustT(t, f.Commit())
			mustT(t, f.Truncate(b, 0))
			mustT(t, f.Commit())
			big := bytes.Repeat([]byte("0123456789abcdef"), (40<<20)/16)
			for i := range big {
				if i%4096 == 0 {
					big[i] = byte(i >> 12)
				}
			}
			x := create(t, f, topDir, "x", big)
			mustT(t, f.Fsync(x))
			y := create(t, f, topDir, "y", big[:5<<20])
			mustT(t, f.Clone(x, 8<<20, y, 1<<20, 4<<20))
			mustT(t, f.Fsync(y))
			wy := append([]byte(nil), big[:5<<20]...)
			copy(wy[1<<20:], big[8<<20:12<<20])
			logStats(t, f)
			crashCheck(t, img, map[string]string{"x": fileDesc(0o644, 1, big), "y": fileDesc(0o644, 1, wy)})
		})
	}
}
