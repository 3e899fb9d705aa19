package compress

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// The kernel-oracle test lets the Linux kernel write compressed extents
// (mount -o compress-force=ALG on a loop device), then decodes the on-disk
// bytes with Decompress and compares them with the files' contents. Extents
// are located with btrfs-progs' dump-tree output, not with this project's
// reader, so the test depends on nothing but this package (and the command
// helpers of internal/testutil).

func requireKernelOracle(t *testing.T) {
	t.Helper()
	testutil.NeedRootLoop(t)
}

type oracleFile struct {
	name string
	data []byte
	ino  uint64
}

func TestKernelOracle(t *testing.T) {
	requireKernelOracle(t)
	for _, alg := range allAlgs {
		t.Run(alg.String(), func(t *testing.T) { kernelOracle(t, alg) })
	}
}

func kernelOracle(t *testing.T, alg Alg) {
	img := filepath.Join(t.TempDir(), "img")
	testutil.Mkfs(t, img, 256<<20)
	mnt := testutil.LoopMount(t, img, "compress-force="+alg.String())

	files := []*oracleFile{
		{name: "text", data: testText(300*1024, 1)},
		{name: "inline", data: testText(3000, 2)}, // small enough to be inlined
		{name: "random", data: testRandom(200*1024, 3)},
		{name: "zeros", data: make([]byte, 256*1024)},
		{name: "mixed", data: testMixed(200*1024, 4)},
		{name: "unaligned", data: testText(70000+123, 5)},
		{name: "ramp", data: testRepeat(140*1024, rampString())},
	}
	for _, fl := range files {
		p := filepath.Join(mnt, fl.name)
		if err := os.WriteFile(p, fl.data, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		fl.ino = fi.Sys().(*syscall.Stat_t).Ino
	}
	testutil.Run(t, "sync")
	testutil.Unmount(t, mnt)

	super := testutil.Run(t, "btrfs", "inspect-internal", "dump-super", img)
	sectorSize := dumpField(t, super, `(?m)^sectorsize\s+(\d+)`)
	chunks := parseChunks(t, testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", "chunk", img))
	extents := parseFileExtents(t, testutil.Run(t, "btrfs", "inspect-internal", "dump-tree", "-t", "5", img))

	raw, err := os.Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	readLogical := func(logical uint64, n int) []byte {
		t.Helper()
		phys, ok := chunks.physical(logical, uint64(n))
		if !ok {
			t.Fatalf("logical %d+%d not in any chunk", logical, n)
		}
		b := make([]byte, n)
		if _, err := raw.ReadAt(b, int64(phys)); err != nil {
			t.Fatalf("reading %d bytes at physical %d: %v", n, phys, err)
		}
		return b
	}

	var nRegular, nInline, nSame int
	for _, fl := range files {
		items := extents[fl.ino]
		if len(items) == 0 {
			t.Fatalf("%s: no EXTENT_DATA items for inode %d", fl.name, fl.ino)
		}
		for _, e := range items {
			if e.compression != 0 && e.compression != alg {
				t.Fatalf("%s@%d: compression %v, mounted with %v", fl.name, e.fileOffset, e.compression, alg)
			}
			if e.inline {
				// Inline data follows the 21-byte file extent item
				// header inside the leaf item.
				leafHdr := readLogical(e.leaf, 101)
				if got := binary.LittleEndian.Uint64(leafHdr[48:]); got != e.leaf {
					t.Fatalf("leaf %d: header bytenr %d", e.leaf, got)
				}
				src := readLogical(e.leaf+101+e.itemOff+21, int(e.itemSize-21))
				if uint64(len(src)) != e.inlineSize {
					t.Fatalf("%s: inline size %d, dump-tree says %d", fl.name, len(src), e.inlineSize)
				}
				got, err := Decompress(e.compression, src, int(e.ram), sectorSize)
				if err != nil {
					t.Fatalf("%s: inline %v extent (%d -> %d bytes): %v", fl.name, e.compression, len(src), e.ram, err)
				}
				checkRange(t, fl, e.fileOffset, got)
				if e.compression != 0 {
					nInline++
					if compareWithKernel(t, fl.name+" inline", e.compression, fl.data[e.fileOffset:min(uint64(len(fl.data)), e.fileOffset+e.ram)], src, sectorSize) {
						nSame++
					}
				}
				continue
			}
			if e.diskBytenr == 0 {
				continue // hole
			}
			src := readLogical(e.diskBytenr, int(e.diskNum))
			got, err := Decompress(e.compression, src, int(e.ram), sectorSize)
			if err != nil {
				t.Fatalf("%s@%d: %v extent (%d -> %d bytes): %v", fl.name, e.fileOffset, e.compression, e.diskNum, e.ram, err)
			}
			if e.offset+e.num > e.ram {
				t.Fatalf("%s@%d: extent offset %d + num %d beyond ram %d", fl.name, e.fileOffset, e.offset, e.num, e.ram)
			}
			checkRange(t, fl, e.fileOffset, got[e.offset:e.offset+e.num])
			if e.compression != 0 {
				nRegular++
				// The kernel compresses file data up to EOF only, not
				// the zeros filling the last sector.
				in := fl.data[min(uint64(len(fl.data)), e.fileOffset):min(uint64(len(fl.data)), e.fileOffset+e.ram)]
				if compareWithKernel(t, fmt.Sprintf("%s@%d", fl.name, e.fileOffset), e.compression, in, src, sectorSize) {
					nSame++
				}
			}
		}
	}
	t.Logf("%v: verified %d compressed regular and %d compressed inline extents written by the kernel; %d identical to our Compress output", alg, nRegular, nInline, nSame)
	if nRegular < 3 {
		t.Errorf("only %d compressed regular extents found", nRegular)
	}
	if nInline < 1 {
		t.Errorf("no compressed inline extent found")
	}
}

// checkRange checks that got equals the file's data at off, with zeros past
// the end of the file.
func checkRange(t *testing.T, fl *oracleFile, off uint64, got []byte) {
	t.Helper()
	want := make([]byte, len(got))
	if off < uint64(len(fl.data)) {
		copy(want, fl.data[off:])
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s@%d: decoded data differs from file content at byte %d of %d", fl.name, off, i, len(got))
	}
}

// compareWithKernel compresses in with Compress and compares the result with
// the kernel's on-disk bytes. Only LZO is expected to match byte for byte
// (zlib and zstd use different encoders); a mismatch is logged, not an error,
// since the kernel's choices may change between versions. Our output must
// always decode to in.
func compareWithKernel(t *testing.T, what string, alg Alg, in, disk []byte, sectorSize int) bool {
	t.Helper()
	out, ok, err := Compress(alg, in, sectorSize)
	if err != nil {
		t.Fatalf("%s: Compress: %v", what, err)
	}
	if !ok {
		t.Logf("%s: kernel compressed %d bytes, our %v encoder did not shrink them", what, len(in), alg)
		return false
	}
	if back, err := Decompress(alg, out, len(in), sectorSize); err != nil || !bytes.Equal(back, in) {
		t.Fatalf("%s: our own output does not round-trip: %v", what, err)
	}
	same := len(out) <= len(disk) && bytes.Equal(out, disk[:len(out)]) && len(bytes.TrimRight(disk[len(out):], "\x00")) == 0
	if !same && alg == LZO {
		t.Logf("%s: our LZO output (%d bytes) differs from the kernel's (%d bytes on disk)", what, len(out), len(disk))
	}
	if alg != LZO {
		t.Logf("%s: %d bytes -> kernel %d bytes on disk, ours %d", what, len(in), len(disk), len(out))
	}
	return same
}

func dumpField(t *testing.T, s, re string) int {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no match for %q in dump", re)
	}
	v, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return v
}

type chunk struct{ logical, length, physical uint64 }

type chunkMap []chunk

// physical maps [logical, logical+n) to a physical offset through stripe 0
// (single-device images: SINGLE data, DUP metadata).
func (cm chunkMap) physical(logical, n uint64) (uint64, bool) {
	for _, c := range cm {
		if logical >= c.logical && logical+n <= c.logical+c.length {
			return c.physical + logical - c.logical, true
		}
	}
	return 0, false
}

var (
	reChunkKey = regexp.MustCompile(`key \(FIRST_CHUNK_TREE CHUNK_ITEM (\d+)\)`)
	reLength   = regexp.MustCompile(`^\s*length (\d+) owner`)
	reStripe0  = regexp.MustCompile(`^\s*stripe 0 devid \d+ offset (\d+)`)
)

func parseChunks(t *testing.T, dump string) chunkMap {
	t.Helper()
	var cm chunkMap
	var cur *chunk
	sc := bufio.NewScanner(strings.NewReader(dump))
	for sc.Scan() {
		line := sc.Text()
		if m := reChunkKey.FindStringSubmatch(line); m != nil {
			cm = append(cm, chunk{logical: atou(t, m[1])})
			cur = &cm[len(cm)-1]
		} else if m := reLength.FindStringSubmatch(line); m != nil && cur != nil {
			cur.length = atou(t, m[1])
		} else if m := reStripe0.FindStringSubmatch(line); m != nil && cur != nil {
			cur.physical = atou(t, m[1])
			cur = nil
		}
	}
	if len(cm) == 0 {
		t.Fatal("no chunks in chunk tree dump")
	}
	return cm
}

type fileExtent struct {
	leaf, itemOff, itemSize uint64
	fileOffset              uint64
	inline                  bool
	inlineSize              uint64
	diskBytenr, diskNum     uint64
	offset, num, ram        uint64
	compression             Alg
}

var (
	reLeaf       = regexp.MustCompile(`^leaf (\d+) items`)
	reExtentItem = regexp.MustCompile(`^\s*item \d+ key \((\d+) EXTENT_DATA (\d+)\) itemoff (\d+) itemsize (\d+)`)
	reAnyItem    = regexp.MustCompile(`^\s*item \d+ key `)
	reInline     = regexp.MustCompile(`inline extent data size (\d+) ram_bytes (\d+) compression (\d+)`)
	reDisk       = regexp.MustCompile(`extent data disk byte (\d+) nr (\d+)`)
	reOffset     = regexp.MustCompile(`extent data offset (\d+) nr (\d+) ram (\d+)`)
	reCompress   = regexp.MustCompile(`extent compression (\d+)`)
)

// parseFileExtents collects EXTENT_DATA items by inode from a dump-tree of
// a filesystem tree, in key order.
func parseFileExtents(t *testing.T, dump string) map[uint64][]*fileExtent {
	t.Helper()
	res := make(map[uint64][]*fileExtent)
	var leaf uint64
	var cur *fileExtent
	sc := bufio.NewScanner(strings.NewReader(dump))
	for sc.Scan() {
		line := sc.Text()
		if m := reLeaf.FindStringSubmatch(line); m != nil {
			leaf = atou(t, m[1])
			cur = nil
			continue
		}
		if m := reExtentItem.FindStringSubmatch(line); m != nil {
			ino := atou(t, m[1])
			cur = &fileExtent{leaf: leaf, fileOffset: atou(t, m[2]), itemOff: atou(t, m[3]), itemSize: atou(t, m[4])}
			res[ino] = append(res[ino], cur)
			continue
		}
		if reAnyItem.MatchString(line) {
			cur = nil
			continue
		}
		if cur == nil {
			continue
		}
		if m := reInline.FindStringSubmatch(line); m != nil {
			cur.inline = true
			cur.inlineSize = atou(t, m[1])
			cur.ram = atou(t, m[2])
			cur.compression = Alg(atou(t, m[3]))
		} else if m := reDisk.FindStringSubmatch(line); m != nil {
			cur.diskBytenr, cur.diskNum = atou(t, m[1]), atou(t, m[2])
		} else if m := reOffset.FindStringSubmatch(line); m != nil {
			cur.offset, cur.num, cur.ram = atou(t, m[1]), atou(t, m[2]), atou(t, m[3])
		} else if m := reCompress.FindStringSubmatch(line); m != nil {
			cur.compression = Alg(atou(t, m[1]))
		}
	}
	return res
}

func atou(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
