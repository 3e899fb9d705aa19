package gobtrfs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gobtrfs/gobtrfs"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

var fuzzBase struct {
	once   sync.Once
	img    []byte
	blocks []treeBlock
	ns     int
	ct     csum.Type
	err    string
}

// fuzzImage builds (once per process) a small image with every inode kind
// and lists its tree blocks.
func fuzzImage(f *testing.F) {
	fuzzBase.once.Do(func() {
		dir, err := os.MkdirTemp("", "gobtrfs-fuzz")
		if err != nil {
			fuzzBase.err = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "src")
		testimg.BuildSource(f, src, testimg.SourceOptions{Seed: 1, ManyFiles: 40})
		img := filepath.Join(dir, "img")
		testutil.MkfsRootdir(f, src, img, 128<<20, "-m", "single", "-n", "4096", "--shrink")
		blocks, info := treeBlocks(f, img)
		fuzzBase.img, _ = os.ReadFile(img)
		fuzzBase.blocks, fuzzBase.ns, fuzzBase.ct = blocks, int(info.Super.NodeSize), info.Csum
	})
	if fuzzBase.err != "" {
		f.Fatal(fuzzBase.err)
	}
}

// FuzzCorruptImage damages one tree block of a real image (optionally
// recomputing its checksum so the damage reaches the tree-checker and the
// item decoders) and reads everything: inode, directory, xattr, symlink and
// file extent paths must return errors, never panic, within
// testutil.DefaultFuzzBounds. FuzzImageWalk (fuzzimg_test.go) damages our
// own image with longer mutation scripts.
func FuzzCorruptImage(f *testing.F) {
	testutil.NeedProgs(f)
	fuzzImage(f)
	for i := range 8 {
		f.Add(uint16(i), uint16(101+25*i), byte(0xff), true, uint16(0))
		f.Add(uint16(i*3), uint16(2000+i*97), byte(0x01), true, uint16(40+i))
	}
	f.Add(uint16(0), uint16(0x60), byte(0x7f), false, uint16(0))
	f.Fuzz(func(t *testing.T, block, off uint16, val byte, fixCsum bool, span uint16) {
		b := fuzzBase.blocks[int(block)%len(fuzzBase.blocks)]
		phys := b.physical[0]
		blk := append([]byte(nil), fuzzBase.img[phys:phys+int64(fuzzBase.ns)]...)
		o := int(off) % fuzzBase.ns
		end := min(o+1+int(span%64), fuzzBase.ns)
		for i := o; i < end; i++ {
			blk[i] ^= val
		}
		if fixCsum {
			fuzzBase.ct.SetBlock(blk)
		}
		img := &overlay{base: fuzzBase.img, off: phys, patch: blk}
		testutil.FuzzBound(t, []byte(fmt.Sprint(block, off, val, fixCsum, span)), func() {
			fsys, err := gobtrfs.OpenReaderAt(img, int64(len(fuzzBase.img)), nil)
			if err != nil {
				return
			}
			walkAll(fsys)
		})
	})
}
