package fusefs

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSyncfsAfterUnlink: `echo x > f; rm f; sync -f .` succeeds, as on
// kernel btrfs. With the writeback cache the kernel still holds the
// deleted file's inode with times to flush, and its SETATTR of them used
// to fail with ENOENT, which syncfs(2) reported.
func TestSyncfsAfterUnlink(t *testing.T) {
	needFuse(t)
	for _, c := range cacheModes {
		t.Run(c.name, func(t *testing.T) {
			img := newImage(t, 256<<20)
			tm := mountImage(t, img, c.o)
			for i := 0; i < 3; i++ {
				must(t, os.WriteFile(tm.path("f"), []byte("hello\n"), 0o644))
				must(t, os.Remove(tm.path("f")))
				d, err := os.Open(tm.dir)
				must(t, err)
				err = unix.Syncfs(int(d.Fd()))
				d.Close()
				if err != nil {
					t.Fatalf("syncfs after writing and deleting a file (round %d): %v", i, err)
				}
			}
			finish(t, tm, img)
		})
	}
}
