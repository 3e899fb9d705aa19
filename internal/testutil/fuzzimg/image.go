// Package fuzzimg builds the base image of the whole-image fuzz targets and
// applies the mutation scripts that damage it. The image is made by our own mkfs and
// fsops, in memory, once per process: every kind of inode (directories,
// inline, regular, zstd/zlib/lzo compressed, sparse and preallocated files,
// reflinks, symlinks, hard links, fifos and device nodes, xattrs), a
// subvolume and a read-only snapshot, and a directory big enough to give
// the FS tree an internal node. A fuzz input is a script of patches to its
// tree blocks (checksums recomputed, so damage reaches the parsers), its
// superblock and its data sectors; see Script.
//
// It lives apart from package testutil because it imports fsops, whose
// own tests import testutil.
package fuzzimg

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/diskio"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/fsops"
	"github.com/gobtrfs/gobtrfs/internal/mkfs"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// Size of the base image (sparse on disk: a few MiB are written).
const Size = 128 << 20 // mkfs's minimum with DUP metadata is 109 MiB

// Block is one tree block of the base image.
type Block struct {
	Tree     ondisk.ObjectID
	Logical  ondisk.LogicalAddr
	Gen      ondisk.Generation
	Level    int
	NumItems int
	Physical []int64 // one per copy (two with DUP metadata)
	// used are the byte ranges of the block that hold something (header,
	// item headers or key pointers, item data): patch offsets land there.
	used [][2]int
}

// Image is the base image and what a script can address in it.
type Image struct {
	Bytes      []byte
	NodeSize   int
	SectorSize int
	Blocks     []Block // every tree block, by tree then logical address
	DataPages  []int64 // physical offsets of the non-zero sectors of data chunks
	info       *fsinfo.FSInfo
	nonZero    [][2]int64 // runs [first, end) of pages (of pageSize) not all zero, for WriteFile
}

var base struct {
	once sync.Once
	img  *Image
	err  error
}

// Base returns the base image, built on first use.
func Base() (*Image, error) {
	base.once.Do(func() { base.img, base.err = build() })
	return base.img, base.err
}

// build makes the image and lists its blocks.
func build() (*Image, error) {
	mem := &memDev{data: make([]byte, Size)}
	cfg := mkfs.Config{FSID: ondisk.UUID{0xf0, 1}, DevUUID: ondisk.UUID{0xf0, 2}, ChunkTreeUUID: ondisk.UUID{0xf0, 3},
		SubvolUUID: ondisk.UUID{0xf0, 4}, Time: time.Unix(1.7e9, 0), Label: "fuzz"}
	if err := mkfs.Make(mem, cfg); err != nil {
		return nil, fmt.Errorf("fuzzimg: mkfs: %w", err)
	}
	if err := populate(mem); err != nil {
		return nil, fmt.Errorf("fuzzimg: populate: %w", err)
	}
	img := &Image{Bytes: mem.data}
	if err := img.index(); err != nil {
		return nil, fmt.Errorf("fuzzimg: index: %w", err)
	}
	return img, nil
}

// memDev is a fixed-size memory device whose bytes become the image
// without a copy.
type memDev struct{ data []byte }

func (m *memDev) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (m *memDev) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(m.data)) {
		return 0, fmt.Errorf("write at %d+%d: past the end of the %d-byte image", off, len(p), len(m.data))
	}
	return copy(m.data[off:], p), nil
}

func (m *memDev) Flush() error { return nil }
func (m *memDev) Size() int64  { return int64(len(m.data)) }
func (m *memDev) Close() error { return nil }

// populate fills the image with every kind of inode.
func populate(dev blockdev.Device) error {
	f, err := fsops.OpenDevice(dev, fsops.Options{})
	if err != nil {
		return err
	}
	p := &populator{f: f}
	p.fill()
	if p.err != nil {
		f.Close()
		return p.err
	}
	return f.Close()
}

type populator struct {
	f   *fsops.FS
	err error
}

var root = ondisk.InodeRef{Root: ondisk.FSTreeObjectID, Ino: fsops.RootDirIno}

func (p *populator) check(err error) {
	if err != nil && p.err == nil {
		p.err = err
	}
}

func (p *populator) file(dir ondisk.InodeRef, name string, mode uint32, data []byte) ondisk.InodeRef {
	if p.err != nil {
		return ondisk.InodeRef{}
	}
	id, err := p.f.Create(dir, name, item.SIFREG|mode, 1000, 1000, 0)
	p.check(err)
	if err == nil && len(data) > 0 {
		_, err = p.f.WriteAt(id, 0, data)
		p.check(err)
	}
	return id
}

func (p *populator) dir(parent ondisk.InodeRef, name string) ondisk.InodeRef {
	if p.err != nil {
		return ondisk.InodeRef{}
	}
	id, err := p.f.Mkdir(parent, name, 0o755, 0, 0)
	p.check(err)
	return id
}

// pattern is compressible but not trivially so.
func pattern(n, seed int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %d of file %d: the quick brown fox %x\n", i, seed, i*seed)
	}
	return b.Bytes()[:n]
}

// noise is incompressible.
func noise(n int, seed uint32) []byte {
	b := make([]byte, n)
	x := seed | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func (p *populator) fill() {
	f := p.f
	files := p.dir(root, "files")
	p.file(files, "empty", 0o644, nil)
	p.file(files, "inline", 0o644, pattern(300, 1))
	reg := p.file(files, "regular", 0o640, noise(70000, 2))
	p.file(files, "setuid", 0o4755, pattern(5000, 3))

	// compressed, one algorithm each (and a compressed inline file)
	comp := p.dir(root, "compressed")
	for _, c := range []struct {
		name string
		alg  compress.Alg
	}{{"zstd", compress.Zstd}, {"zlib", compress.Zlib}, {"lzo", compress.LZO}} {
		f.SetCompress(c.alg)
		p.file(comp, c.name, 0o644, pattern(200000, int(c.alg)))
		p.file(comp, c.name+"-inline", 0o644, pattern(1500, 10+int(c.alg)))
	}
	f.SetCompress(compress.None)

	// holes and preallocated extents
	sparse := p.dir(root, "sparse")
	if h := p.file(sparse, "holes", 0o644, pattern(4096, 20)); p.err == nil {
		_, err := f.WriteAt(h, 1<<20, pattern(8192, 21))
		p.check(err)
		p.check(f.Truncate(h, 3<<20))
	}
	if pa := p.file(sparse, "prealloc", 0o644, nil); p.err == nil {
		p.check(f.Fallocate(pa, 0, 0, 256<<10))
		_, err := f.WriteAt(pa, 64<<10, pattern(4096, 22))
		p.check(err)
		p.check(f.Fallocate(pa, fsops.FallocKeepSize, 256<<10, 64<<10))
	}
	if ph := p.file(sparse, "punched", 0o644, noise(64<<10, 23)); p.err == nil {
		p.check(f.Fallocate(ph, fsops.FallocKeepSize|fsops.FallocPunchHole, 16<<10, 16<<10))
	}
	if cl := p.file(sparse, "reflink", 0o644, nil); p.err == nil && reg != (ondisk.InodeRef{}) {
		p.check(f.Clone(reg, 0, cl, 0, 64<<10))
	}

	// links, special files, xattrs
	links := p.dir(root, "links")
	if p.err == nil {
		_, err := f.Symlink(links, "sym", "../files/regular", 0, 0)
		p.check(err)
		_, err = f.Symlink(links, "dangling", "/nonexistent/target/of/a/rather/long/symlink", 0, 0)
		p.check(err)
		p.check(f.Link(reg, links, "hard"))
		_, err = f.Create(links, "fifo", item.SIFIFO|0o644, 0, 0, 0)
		p.check(err)
		_, err = f.Create(links, "chr", item.SIFCHR|0o600, 0, 0, ondisk.MakeDevT(1, 3))
		p.check(err)
	}
	// bait for restore (see the dup-over-symlink seeds): a symlink out of
	// DESTDIR, then a file whose name differs by one letter; a symlink to
	// DESTDIR's parent, then a directory holding a file "victim"
	if p.err == nil {
		_, err := f.Symlink(links, "esc", "../../victim", 0, 0)
		p.check(err)
		p.file(links, "esd", 0o644, []byte("pwned through a file symlink\n"))
		_, err = f.Symlink(links, "escd", "../..", 0, 0)
		p.check(err)
		p.file(p.dir(links, "escx"), "victim", 0o644, []byte("pwned through a directory symlink\n"))
	}
	if x := p.file(root, "xattrs", 0o644, []byte("has xattrs\n")); p.err == nil {
		p.check(f.SetXattr(x, "user.small", []byte("value"), 0))
		p.check(f.SetXattr(x, "user.big", pattern(2000, 30), 0))
		p.check(f.SetXattr(x, "security.selinux", []byte("system_u:object_r:tmp_t:s0\x00"), 0))
	}

	// a directory spanning several leaves: the FS tree gets a level-1 node
	many := p.dir(root, "many")
	for i := 0; i < 150 && p.err == nil; i++ {
		p.file(many, fmt.Sprintf("entry-with-a-longish-name-%03d", i), 0o644, pattern(40+i, 100+i))
	}
	deep := root
	for i := 0; i < 6; i++ {
		deep = p.dir(deep, fmt.Sprintf("d%d", i))
	}
	p.file(deep, "leaf", 0o644, []byte("deep\n"))

	// a subvolume with content and a read-only snapshot of it
	if p.err != nil {
		return
	}
	sv, err := f.CreateSubvolume(root, "subvol", 0o755, 0, 0)
	p.check(err)
	if p.err != nil {
		return
	}
	svRoot := ondisk.InodeRef{Root: sv, Ino: fsops.RootDirIno}
	p.file(svRoot, "in-subvol", 0o644, pattern(9000, 40))
	inner := p.dir(svRoot, "inner")
	f.SetCompress(compress.Zstd)
	p.file(inner, "compressed", 0o644, pattern(50000, 41))
	f.SetCompress(compress.None)
	if p.err != nil {
		return
	}
	_, err = f.Snapshot(sv, root, "snap", true)
	p.check(err)
	// diverge after the snapshot: shared and unshared blocks
	p.file(svRoot, "after-snapshot", 0o644, pattern(3000, 42))
}

// index lists the tree blocks and data sectors of the image.
func (img *Image) index() error {
	dev := &blockdev.ReaderAt{R: bytes.NewReader(img.Bytes), N: int64(len(img.Bytes))}
	info, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	img.info = info
	img.NodeSize = int(info.Super.NodeSize)
	img.SectorSize = int(info.Super.SectorSize)
	ids := []ondisk.ObjectID{ondisk.ChunkTreeObjectID, ondisk.RootTreeObjectID}
	info.RootTree.Range(ondisk.Key{}, ondisk.MaxKey, func(k ondisk.Key, _ []byte) bool {
		if k.Type == ondisk.RootItemKey {
			ids = append(ids, k.ObjectID)
		}
		return true
	})
	seen := map[ondisk.LogicalAddr]bool{}
	for _, id := range ids {
		tr, err := info.Tree(id)
		if err != nil {
			return err
		}
		var werr error
		tr.Walk(func(n *diskio.Node, err error) error {
			if err != nil {
				werr = err
				return err
			}
			if seen[n.Addr] { // shared by a snapshot
				return nil
			}
			seen[n.Addr] = true
			b, err := img.block(id, n, info.Chunks)
			if err != nil {
				werr = err
				return err
			}
			img.Blocks = append(img.Blocks, b)
			return nil
		})
		if werr != nil {
			return fmt.Errorf("tree %d: %w", id, werr)
		}
	}
	sort.SliceStable(img.Blocks, func(i, j int) bool {
		a, b := img.Blocks[i], img.Blocks[j]
		if a.Tree != b.Tree {
			return a.Tree < b.Tree
		}
		return a.Logical < b.Logical
	})
	img.dataPages(info.Chunks)
	for pg := int64(0); pg*pageSize < int64(len(img.Bytes)); pg++ {
		if allZero(img.Bytes[pg*pageSize : (pg+1)*pageSize]) {
			continue
		}
		if n := len(img.nonZero); n > 0 && img.nonZero[n-1][1] == pg {
			img.nonZero[n-1][1]++
		} else {
			img.nonZero = append(img.nonZero, [2]int64{pg, pg + 1})
		}
	}
	return nil
}

func (img *Image) block(tree ondisk.ObjectID, n *diskio.Node, cm *volume.ChunkMap) (Block, error) {
	copies, _, err := cm.Map(n.Addr, uint64(img.NodeSize))
	if err != nil {
		return Block{}, err
	}
	b := Block{Tree: tree, Logical: n.Addr, Gen: n.Generation(), Level: n.Level(), NumItems: n.NumItems()}
	for _, c := range copies {
		b.Physical = append(b.Physical, int64(c.Physical))
	}
	const hdr = 101
	if n.IsLeaf() {
		b.used = append(b.used, [2]int{0, min(hdr+25*b.NumItems, img.NodeSize)})
		lo := img.NodeSize
		for i := 0; i < b.NumItems; i++ {
			lo = min(lo, hdr+int(n.Item(i).Offset))
		}
		if lo < img.NodeSize {
			b.used = append(b.used, [2]int{lo, img.NodeSize})
		}
	} else {
		b.used = append(b.used, [2]int{0, min(hdr+33*b.NumItems, img.NodeSize)})
	}
	return b, nil
}

// dataPages lists the non-zero sectors of the data chunks.
func (img *Image) dataPages(cm *volume.ChunkMap) {
	ss := int64(img.SectorSize)
	for _, m := range cm.All() {
		if m.Chunk.Type&ondisk.BlockGroupData == 0 {
			continue
		}
		copies, _, err := cm.Map(m.Logical, m.Chunk.Length)
		if err != nil || len(copies) == 0 {
			continue
		}
		start := int64(copies[0].Physical)
		for off := start; off < start+int64(m.Chunk.Length) && off+ss <= int64(len(img.Bytes)); off += ss {
			if !allZero(img.Bytes[off : off+ss]) {
				img.DataPages = append(img.DataPages, off)
			}
		}
	}
}

var zeroPage [pageSize]byte

func allZero(b []byte) bool {
	for len(b) >= pageSize {
		if !bytes.Equal(b[:pageSize], zeroPage[:]) {
			return false
		}
		b = b[pageSize:]
	}
	return bytes.Equal(b, zeroPage[:len(b)])
}

// Describe lists the blocks, for choosing seeds by hand.
func (img *Image) Describe() string {
	var b bytes.Buffer
	for i, bl := range img.Blocks {
		fmt.Fprintf(&b, "%3d tree %d block %d level %d items %d gen %d copies %v\n", i, bl.Tree, bl.Logical, bl.Level, bl.NumItems, bl.Gen, bl.Physical)
	}
	fmt.Fprintf(&b, "%d data sectors\n", len(img.DataPages))
	return b.String()
}
