package fuzzimg

import (
	"encoding/binary"
	"io"
	"os"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
)

// A script is a fuzz input: one flags byte, then operations, each
//
//	kind (1 byte), idx (uint16 LE), off (uint16 LE), n (1 byte), data (n&15 bytes)
//
// (an operation cut short by the end of the script uses what is there).
// idx picks a tree block (Image.Blocks, modulo their number) or a data
// sector; off is an offset into the used bytes of a tree block (header, item
// headers or key pointers, item data — the free space in the middle is
// skipped, so most offsets hit something that is parsed). Kinds (kind&7):
//
//	0 set the bytes at off to data; block checksum recomputed
//	1 xor the bytes at off with data; checksum recomputed
//	2 xor, checksum left stale (a plain bit flip on disk)
//	3 superblock: set bytes at 32+off%(4096-32); checksum recomputed
//	4 key pointer slot off%nritems of node idx := block data[0:2] (its
//	  bytenr and generation): cycles, shared and misplaced children;
//	  on a leaf, as 0
//	5 data sector idx (Image.DataPages): xor at off%sectorsize (the data
//	  checksum goes stale; see NoVerify)
//	6 copy block data[0:2]'s bytes over block idx, keeping idx's bytenr
//	  (a block of another tree, level or generation at that address);
//	  checksum recomputed
//	7 add int8(data[0]) to the little-endian uint64 at off (sizes, counts,
//	  offsets off by a little); checksum recomputed
//
// kind&8 patches only the first copy of a DUP block (the other stays good,
// so the reader must fall back to it). Flags bit 0 (NoVerify) asks the
// reader not to verify data checksums, so damaged data reaches the
// decompressors.
const (
	OpSet = iota
	OpXor
	OpXorRaw
	OpSuper
	OpKeyPtr
	OpData
	OpCopy
	OpAdd

	OpFirstCopy = 8
	maxOps      = 64
)

// Op builds one script operation (for seeds).
func Op(kind byte, idx, off uint16, data ...byte) []byte {
	b := []byte{kind, byte(idx), byte(idx >> 8), byte(off), byte(off >> 8), byte(len(data))}
	return append(b, data...)
}

// Script builds a script from its flags and operations (for seeds).
func Script(flags byte, ops ...[]byte) []byte {
	b := []byte{flags}
	for _, o := range ops {
		b = append(b, o...)
	}
	return b
}

// NoVerify reports whether the script asks for reads without data
// checksum verification.
func NoVerify(script []byte) bool { return len(script) > 0 && script[0]&1 != 0 }

// Overlay is the base image with the pages a script changed; reads see the
// changes, writes (a read-write backend's) go to private copies of pages.
type Overlay struct {
	img   *Image
	pages map[int64][]byte // by page of pageSize bytes
}

const pageSize = 4096

// Apply runs script over a fresh overlay of the image.
func (img *Image) Apply(script []byte) *Overlay {
	o := &Overlay{img: img, pages: map[int64][]byte{}}
	if len(script) == 0 {
		return o
	}
	script = script[1:]
	for n := 0; len(script) >= 6 && n < maxOps; n++ {
		kind := script[0]
		idx := int(binary.LittleEndian.Uint16(script[1:]))
		off := int(binary.LittleEndian.Uint16(script[3:]))
		l := min(int(script[5]&15), len(script)-6)
		data := script[6 : 6+l]
		script = script[6+l:]
		o.apply(kind, idx, off, data)
	}
	return o
}

func (o *Overlay) apply(kind byte, idx, off int, data []byte) {
	img := o.img
	switch kind & 7 {
	case OpSuper:
		sb := o.read(int64(ondisk.SuperMirrorOffsets[0]), ondisk.SuperInfoSize)
		at := 32 + off%(ondisk.SuperInfoSize-32)
		copy(sb[at:], data)
		img.info.Csum.SetBlock(sb)
		o.WriteAt(sb, int64(ondisk.SuperMirrorOffsets[0]))
		return
	case OpData:
		if len(img.DataPages) == 0 {
			return
		}
		pos := img.DataPages[idx%len(img.DataPages)]
		sec := o.read(pos, img.SectorSize)
		at := off % img.SectorSize
		for i, c := range data {
			if at+i < len(sec) {
				sec[at+i] ^= c
			}
		}
		o.WriteAt(sec, pos)
		return
	}
	if len(img.Blocks) == 0 {
		return
	}
	b := &img.Blocks[idx%len(img.Blocks)]
	blk := o.read(b.Physical[0], img.NodeSize)
	fix := true
	switch kind & 7 {
	case OpSet:
		o.set(b, blk, off, data, false)
	case OpXor:
		o.set(b, blk, off, data, true)
	case OpXorRaw:
		o.set(b, blk, off, data, true)
		fix = false
	case OpKeyPtr:
		if b.Level == 0 || b.NumItems == 0 || len(data) < 2 {
			o.set(b, blk, off, data, false)
			break
		}
		to := img.Blocks[int(binary.LittleEndian.Uint16(data))%len(img.Blocks)]
		at := 101 + 33*(off%b.NumItems) + 17
		if at+16 <= len(blk) {
			binary.LittleEndian.PutUint64(blk[at:], uint64(to.Logical))
			binary.LittleEndian.PutUint64(blk[at+8:], uint64(to.Gen))
		}
	case OpCopy:
		if len(data) < 2 {
			return
		}
		from := img.Blocks[int(binary.LittleEndian.Uint16(data))%len(img.Blocks)]
		copy(blk, o.read(from.Physical[0], img.NodeSize))
		binary.LittleEndian.PutUint64(blk[0x30:], uint64(b.Logical))
	case OpAdd:
		if len(data) < 1 {
			return
		}
		at := b.at(off)
		if at+8 <= len(blk) {
			v := binary.LittleEndian.Uint64(blk[at:])
			binary.LittleEndian.PutUint64(blk[at:], v+uint64(int64(int8(data[0]))))
		}
	}
	if fix {
		img.info.Csum.SetBlock(blk)
	}
	for i, p := range b.Physical {
		if i > 0 && kind&OpFirstCopy != 0 {
			break
		}
		o.WriteAt(blk, p)
	}
}

// at maps off into the used bytes of b.
func (b *Block) at(off int) int {
	total := 0
	for _, r := range b.used {
		total += r[1] - r[0]
	}
	if total == 0 {
		return 0
	}
	off %= total
	for _, r := range b.used {
		if off < r[1]-r[0] {
			return r[0] + off
		}
		off -= r[1] - r[0]
	}
	return 0
}

func (o *Overlay) set(b *Block, blk []byte, off int, data []byte, xor bool) {
	at := b.at(off)
	for i, c := range data {
		if at+i >= len(blk) {
			break
		}
		if xor {
			blk[at+i] ^= c
		} else {
			blk[at+i] = c
		}
	}
}

// read returns a copy of n bytes at off as the overlay has them.
func (o *Overlay) read(off int64, n int) []byte {
	b := make([]byte, n)
	o.ReadAt(b, off)
	return b
}

// ReadAt reads the image with the script's changes.
func (o *Overlay) ReadAt(p []byte, off int64) (int, error) {
	base := o.img.Bytes
	if off < 0 || off >= int64(len(base)) {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && off < int64(len(base)) {
		pg, in := off/pageSize, off%pageSize
		src := base[pg*pageSize : min((pg+1)*pageSize, int64(len(base)))]
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

// WriteAt changes the overlay (never the base image).
func (o *Overlay) WriteAt(p []byte, off int64) (int, error) {
	base := o.img.Bytes
	if off < 0 || off+int64(len(p)) > int64(len(base)) {
		return 0, io.ErrShortWrite
	}
	for n := 0; n < len(p); {
		pg, in := (off+int64(n))/pageSize, (off+int64(n))%pageSize
		q, ok := o.pages[pg]
		if !ok {
			q = append([]byte(nil), base[pg*pageSize:(pg+1)*pageSize]...)
			o.pages[pg] = q
		}
		n += copy(q[in:], p[n:])
	}
	return len(p), nil
}

// Size is the image size.
func (o *Overlay) Size() int64 { return int64(len(o.img.Bytes)) }

// Flush and Close do nothing: with ReadAt, WriteAt and Size they make an
// Overlay a blockdev.Device.
func (o *Overlay) Flush() error { return nil }
func (o *Overlay) Close() error { return nil }

// WriteFile writes the changed image to path (sparse: only non-zero pages
// are written), replacing what was there. The commands and the mount take
// a path; one file per process is rewritten for every input.
func (o *Overlay) WriteFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(o.Size()); err != nil {
		f.Close()
		return err
	}
	base := o.img.Bytes
	write := func(pg int64, b []byte) error {
		_, err := f.WriteAt(b, pg*pageSize)
		return err
	}
	// the base's non-zero runs, then the changed pages over them
	for _, r := range o.img.nonZero {
		if err := write(r[0], base[r[0]*pageSize:r[1]*pageSize]); err != nil {
			f.Close()
			return err
		}
	}
	for pg, b := range o.pages {
		if err := write(pg, b); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
