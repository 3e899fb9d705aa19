package check

import (
	"encoding/binary"
	"flag"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/csum"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// overlay is a read-only view of a base image with some pages replaced,
// so that each fuzz input damages its own copy without copying the image.
type overlay struct {
	base  []byte
	pages map[int64][]byte // by 4 KiB page
}

const pageSize = 4096

func (o *overlay) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(o.base)) {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off < int64(len(o.base)) {
		pg := off / pageSize
		in := off % pageSize
		src := o.base[pg*pageSize : min((pg+1)*pageSize, int64(len(o.base)))]
		if q, ok := o.pages[pg]; ok {
			src = q
		}
		c := copy(p[n:], src[in:])
		n += c
		off += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (o *overlay) WriteAt(p []byte, off int64) (int, error) {
	for n := 0; n < len(p); {
		pg := (off + int64(n)) / pageSize
		in := (off + int64(n)) % pageSize
		q, ok := o.pages[pg]
		if !ok {
			q = append([]byte(nil), o.base[pg*pageSize:(pg+1)*pageSize]...)
			o.pages[pg] = q
		}
		n += copy(q[in:], p[n:])
	}
	return len(p), nil
}

func (o *overlay) Flush() error { return nil }
func (o *overlay) Size() int64  { return int64(len(o.base)) }
func (o *overlay) Close() error { return nil }

// fuzzBase is the image every fuzz input damages: a mkfs.btrfs --rootdir
// image when btrfs-progs is installed (inodes, file extents, checksums),
// else an empty image of our own mkfs. blocks lists its tree blocks.
var fuzzBase struct {
	once     sync.Once
	img      []byte
	blocks   []ondisk.LogicalAddr
	nodesize int
	err      error
}

func loadFuzzBase(t testing.TB) {
	fuzzBase.once.Do(func() {
		var img []byte
		if _, err := exec.LookPath("mkfs.btrfs"); err == nil {
			dir, err := os.MkdirTemp("", "check-fuzz-")
			if err != nil {
				fuzzBase.err = err
				return
			}
			defer os.RemoveAll(dir)
			src := filepath.Join(dir, "src")
			writeSmallSource(src)
			path := filepath.Join(dir, "img")
			mkfsImage(t, path, src, 128<<20, "-n", "4096")
			img, fuzzBase.err = os.ReadFile(path)
		} else {
			mem := blockdev.NewMemory(128 << 20)
			fuzzBase.err = mkfs.Make(mem, mkfs.Config{NodeSize: 4096, FSID: ondisk.UUID{1}, DevUUID: ondisk.UUID{2},
				ChunkTreeUUID: ondisk.UUID{3}, SubvolUUID: ondisk.UUID{4}, Time: time.Unix(1e9, 0)})
			img = mem.Bytes()
		}
		if fuzzBase.err != nil {
			return
		}
		fuzzBase.img = img
		fuzzBase.err = listBlocks(img)
	})
	if fuzzBase.err != nil {
		t.Fatal(fuzzBase.err)
	}
}

// writeSmallSource makes a few files, a hard link, a symlink and an xattr-free dir.
func writeSmallSource(dir string) {
	os.MkdirAll(filepath.Join(dir, "d/e"), 0o755)
	r := rand.New(rand.NewSource(7))
	for i, n := range []int{0, 1, 100, 3000, 4096, 5000, 70000, 300000} {
		b := make([]byte, n)
		r.Read(b)
		os.WriteFile(filepath.Join(dir, "d", "f"+string(rune('a'+i))), b, 0o644)
	}
	for i := 0; i < 60; i++ {
		os.WriteFile(filepath.Join(dir, "d/e", "small-file-with-name-"+string(rune('a'+i%26))+string(rune('a'+i/26))), []byte("x"), 0o644)
	}
	os.Link(filepath.Join(dir, "d/fc"), filepath.Join(dir, "d/e/link"))
	os.Symlink("../fa", filepath.Join(dir, "d/e/sym"))
}

// listBlocks records the tree blocks of the base image (with our checker's walk).
func listBlocks(img []byte) error {
	dev := &blockdev.ReaderAt{R: &overlay{base: img}, N: int64(len(img))}
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	c := newChecker(fi, Options{})
	c.run()
	for a := range c.blocks {
		fuzzBase.blocks = append(fuzzBase.blocks, a)
	}
	sort.Slice(fuzzBase.blocks, func(i, j int) bool { return fuzzBase.blocks[i] < fuzzBase.blocks[j] })
	fuzzBase.nodesize = int(fi.Super.NodeSize)
	return nil
}

// damage applies a mutation script to a fresh overlay of the base image.
// Each 6-byte op: block index (2), offset in block (2), xor value (1),
// flags (1: bit 0 fixes the checksum; bit 1 damages the superblock instead).
func damage(script []byte) (*overlay, error) {
	o := &overlay{base: fuzzBase.img, pages: map[int64][]byte{}}
	dev := &blockdev.ReaderAt{R: o, N: o.Size()}
	fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	ns := fuzzBase.nodesize
	for len(script) >= 6 {
		bi := int(binary.LittleEndian.Uint16(script))
		off := int(binary.LittleEndian.Uint16(script[2:]))
		x, fl := script[4], script[5]
		script = script[6:]
		if fl&2 != 0 {
			b := make([]byte, ondisk.SuperInfoSize)
			o.ReadAt(b, int64(ondisk.SuperMirrorOffsets[0]))
			b[32+off%(ondisk.SuperInfoSize-32)] ^= x
			if fl&1 != 0 {
				fi.Csum.SetBlock(b)
			}
			o.WriteAt(b, int64(ondisk.SuperMirrorOffsets[0]))
			continue
		}
		if len(fuzzBase.blocks) == 0 {
			continue
		}
		addr := fuzzBase.blocks[bi%len(fuzzBase.blocks)]
		copies, _, err := fi.Chunks.Map(addr, uint64(ns))
		if err != nil {
			continue
		}
		b := make([]byte, ns)
		o.ReadAt(b, int64(copies[0].Physical))
		b[off%ns] ^= x
		if fl&1 != 0 {
			csum.Type(fi.Super.CsumType).SetBlock(b)
		}
		for _, c := range copies {
			o.WriteAt(b, int64(c.Physical))
		}
	}
	return o, nil
}

// checkDamaged runs the checker over a damaged image; it must not panic.
func checkDamaged(t *testing.T, script []byte) {
	o, err := damage(script)
	if err != nil {
		return
	}
	rep, err := device(&blockdev.ReaderAt{R: o, N: o.Size()}, Options{CheckDataCsum: len(script)%2 == 1, CacheBytes: 8 << 20})
	if err == nil {
		_ = rep.String()
	}
}

// FuzzCheck damages tree blocks (and the superblock) of a small image and
// runs the checker: it must never panic, whatever it finds.
func FuzzCheck(f *testing.F) {
	f.Add([]byte{0, 0, 0x60, 0, 0x01, 1})                     // nritems of a block, checksum fixed
	f.Add([]byte{3, 0, 0x30, 0, 0xff, 0})                     // bytenr, checksum broken
	f.Add([]byte{5, 0, 0x65, 0, 0x80, 1, 7, 0, 120, 1, 9, 1}) // item area and level
	f.Add([]byte{0, 0, 0x50, 0, 0x01, 3})                     // superblock root
	f.Add([]byte{9, 0, 0x10, 1, 0x04, 1})
	f.Fuzz(func(t *testing.T, script []byte) {
		loadFuzzBase(t)
		checkDamaged(t, script)
	})
}

var seedFlag = flag.Int64("seed", 0, "seed for TestRandomDamage (0: time-based)")

// TestRandomDamage is a short deterministic fuzz run for plain go test:
// random single and multiple byte changes to random tree blocks, with and
// without a fixed checksum. Replay with -seed.
func TestRandomDamage(t *testing.T) {
	loadFuzzBase(t)
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	r := rand.New(rand.NewSource(seed))
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := 0; i < n; i++ {
		script := make([]byte, 6*(1+r.Intn(4)))
		r.Read(script)
		for j := 5; j < len(script); j += 6 {
			script[j] = 1 // keep checksums valid, so the damage reaches the item checks
			if r.Intn(4) == 0 {
				script[j] = 0
			}
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Fatalf("panic on script %x (seed %d, round %d): %v", script, seed, i, p)
				}
			}()
			checkDamaged(t, script)
		}()
	}
}
