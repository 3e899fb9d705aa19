package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/check/checktest"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestMkfsRootdir: `gobtrfs mkfs --rootdir` of a tree with every inode kind
// gives an image that our checker and btrfs check pass, that our restore
// reproduces exactly (nanosecond times, holes, hard links, xattrs, devices),
// and — when root with loop devices — that the kernel shows identically.
func TestMkfsRootdir(t *testing.T) {
	for _, v := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"sha256-4k-single", []string{"--csum", "sha256", "-n", "4096", "-m", "single"}},
		{"blake2-64k-zstd", []string{"--csum", "blake2", "-n", "65536", "--compress", "zstd"}},
		{"xxhash-lzo", []string{"--csum", "xxhash", "--compress", "lzo"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			notes := testimg.BuildSource(t, src, testimg.SourceOptions{Seed: 7, ManyFiles: 600})
			for _, n := range notes {
				t.Log(n)
			}
			img := filepath.Join(dir, "img")
			args := append([]string{"-q", "-b", "512M", "--rootdir", src}, v.args...)
			if out, err := mkfsCmd(t, append(args, img)...); err != nil {
				t.Fatalf("mkfs: %v\n%s", err, out)
			}
			checktest.Image(t, img)

			dst := filepath.Join(dir, "restored")
			if err := restoreMain([]string{"-q", "--devices", "--keep-setuid", img, dst}, os.Stderr); err != nil {
				t.Fatalf("restore: %v", err)
			}
			if d := testimg.Compare(src, dst, testimg.CompareOptions{SkipRootMeta: true}); len(d) > 0 {
				t.Fatalf("restore differs from source:\n%s", strings.Join(d, "\n"))
			}
			if testutil.HaveRootLoop() {
				mnt := testutil.LoopMount(t, img, "ro")
				defer testutil.Unmount(t, mnt)
				if d := testimg.Compare(src, mnt, testimg.CompareOptions{SkipRootMeta: true}); len(d) > 0 {
					t.Fatalf("kernel view differs from source:\n%s", strings.Join(d, "\n"))
				}
			}
		})
	}
}
