package compress

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

var allAlgs = []Alg{Zlib, LZO, Zstd}

// testText returns n bytes of compressible English-like text.
func testText(n int, seed uint64) []byte {
	words := strings.Fields("the quick brown fox jumps over lazy dog btrfs extent " +
		"compression sector chunk tree leaf node inode subvolume snapshot copy on write " +
		"checksum superblock device stripe metadata data zlib lzo zstd kernel")
	r := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

func testRandom(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func testRepeat(n int, pattern string) []byte {
	return bytes.Repeat([]byte(pattern), n/len(pattern)+1)[:n]
}

// testMixed alternates random and compressible runs of various lengths, which
// exercises long literal runs, long matches and far offsets.
func testMixed(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	var b []byte
	for len(b) < n {
		switch r.IntN(4) {
		case 0:
			b = append(b, testRandom(1+r.IntN(700), r.Uint64())...)
		case 1:
			b = append(b, make([]byte, 1+r.IntN(5000))...)
		case 2:
			b = append(b, testText(1+r.IntN(3000), r.Uint64())...)
		case 3:
			if len(b) > 0 { // copy of earlier data, possibly far back
				off := r.IntN(len(b))
				l := min(1+r.IntN(300), len(b)-off)
				b = append(b, b[off:off+l]...)
			}
		}
	}
	return b[:n]
}

type testInput struct {
	name string
	data []byte
}

func testInputs() []testInput {
	sizes := []int{1, 2, 3, 4, 5, 16, 17, 19, 20, 21, 22, 64, 238, 239, 255, 300, 511, 512, 1000,
		4095, 4096, 4097, 8191, 8192, 12289, 50000, 65536, 100000, 131071, 131072}
	var ins []testInput
	for i, n := range sizes {
		seed := uint64(i)
		ins = append(ins,
			testInput{fmt.Sprintf("zeros/%d", n), make([]byte, n)},
			testInput{fmt.Sprintf("random/%d", n), testRandom(n, seed)},
			testInput{fmt.Sprintf("text/%d", n), testText(n, seed)},
			testInput{fmt.Sprintf("repeat/%d", n), testRepeat(n, "abcdefghij0123456789xyz")},
			testInput{fmt.Sprintf("byte-ramp/%d", n), testRepeat(n, rampString())},
			testInput{fmt.Sprintf("mixed/%d", n), testMixed(n, seed)},
		)
	}
	return ins
}

func rampString() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}

// compressible reports whether every algorithm is expected to shrink d.
func compressible(name string, n int) bool {
	return n >= 4096 && !strings.HasPrefix(name, "random/") && !strings.HasPrefix(name, "byte-ramp/4095")
}

func pad(b []byte, sectorSize int) []byte {
	return append(bytes.Clone(b), make([]byte, roundUp(len(b), sectorSize)-len(b))...)
}

func TestRoundTrip(t *testing.T) {
	for _, alg := range allAlgs {
		for _, sectorSize := range []int{4096, 65536, 512} {
			if alg != LZO && sectorSize != 4096 {
				continue // sector size matters only to LZO
			}
			t.Run(fmt.Sprintf("%v/sector%d", alg, sectorSize), func(t *testing.T) {
				for _, in := range testInputs() {
					out, ok, err := Compress(alg, in.data, sectorSize)
					if err != nil {
						t.Fatalf("%s: Compress: %v", in.name, err)
					}
					if !ok {
						if out != nil {
							t.Errorf("%s: ok=false but output returned", in.name)
						}
						if compressible(in.name, len(in.data)) {
							t.Errorf("%s: not compressed", in.name)
						}
						continue
					}
					if len(out) >= len(in.data) {
						t.Errorf("%s: ok=true with %d bytes output for %d input", in.name, len(out), len(in.data))
					}
					for _, src := range [][]byte{out, pad(out, sectorSize)} {
						got, err := Decompress(alg, src, len(in.data), sectorSize)
						if err != nil {
							t.Fatalf("%s: Decompress(%d bytes): %v", in.name, len(src), err)
						}
						if !bytes.Equal(got, in.data) {
							t.Fatalf("%s: round trip mismatch", in.name)
						}
					}
					// Asking for more than was stored zero-fills.
					got, err := Decompress(alg, pad(out, sectorSize), len(in.data)+100, sectorSize)
					if err != nil {
						t.Fatalf("%s: Decompress longer: %v", in.name, err)
					}
					if !bytes.Equal(got[:len(in.data)], in.data) || !bytes.Equal(got[len(in.data):], make([]byte, 100)) {
						t.Fatalf("%s: longer decompress not data + zeros", in.name)
					}
					// Asking for less truncates.
					if len(in.data) > 1 {
						got, err := Decompress(alg, out, len(in.data)/2, sectorSize)
						if err != nil {
							t.Fatalf("%s: Decompress shorter: %v", in.name, err)
						}
						if !bytes.Equal(got, in.data[:len(in.data)/2]) {
							t.Fatalf("%s: shorter decompress mismatch", in.name)
						}
					}
				}
			})
		}
	}
}

func TestCompressRatio(t *testing.T) {
	text := testText(128*1024, 42)
	for _, alg := range allAlgs {
		out, ok, err := Compress(alg, text, 4096)
		if err != nil || !ok {
			t.Fatalf("%v: ok=%v err=%v", alg, ok, err)
		}
		t.Logf("%v: 128 KiB text -> %d bytes", alg, len(out))
		if len(out) > len(text)/2 {
			t.Errorf("%v: poor compression: %d bytes", alg, len(out))
		}
		zeros := make([]byte, 128*1024)
		out, ok, err = Compress(alg, zeros, 4096)
		if err != nil || !ok {
			t.Fatalf("%v zeros: ok=%v err=%v", alg, ok, err)
		}
		t.Logf("%v: 128 KiB zeros -> %d bytes", alg, len(out))
	}
}

func TestZstdPadding(t *testing.T) {
	data := testText(10000, 7)
	out, ok, err := Compress(Zstd, data, 4096)
	if err != nil || !ok {
		t.Fatalf("Compress: ok=%v err=%v", ok, err)
	}
	padded := pad(out, 4096)
	if len(padded) == len(out) {
		t.Fatal("test needs padding")
	}
	got, err := Decompress(Zstd, padded, len(data), 4096)
	if err != nil {
		t.Fatalf("Decompress padded: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("mismatch")
	}
	// A stream that decodes short of ramBytes, followed by padding: the
	// padding must not be parsed as a second frame.
	got, err = Decompress(Zstd, padded, 12288, 4096)
	if err != nil {
		t.Fatalf("Decompress padded, ramBytes larger: %v", err)
	}
	if !bytes.Equal(got[:len(data)], data) || !bytes.Equal(got[len(data):], make([]byte, 12288-len(data))) {
		t.Fatal("mismatch with zero fill")
	}
	// Padding several sectors long, as a whole disk extent could be read.
	got, err = Decompress(Zstd, append(padded, make([]byte, 8192)...), 12288, 4096)
	if err != nil || !bytes.Equal(got[:len(data)], data) {
		t.Fatalf("Decompress with long padding: %v", err)
	}
}

func TestZstdFrameProperties(t *testing.T) {
	for _, n := range []int{700, 1024, 1025, 4096, 65536, 131072} {
		data := testText(n, uint64(n))
		out, ok, err := Compress(Zstd, data, 4096)
		if err != nil || !ok {
			t.Fatalf("%d: ok=%v err=%v", n, ok, err)
		}
		start, end, fok := zstdFirstFrame(out)
		if !fok || start != 0 || end != len(out) {
			t.Fatalf("%d: output is not exactly one frame: %v %d %d/%d", n, fok, start, end, len(out))
		}
		fhd := out[4]
		if fhd&0x04 != 0 {
			t.Errorf("%d: checksum flag set", n)
		}
		if fhd&0x03 != 0 {
			t.Errorf("%d: dictionary id present", n)
		}
		if fhd&0x20 == 0 {
			// Window descriptor: exponent and mantissa.
			wd := out[5]
			exp := int(wd >> 3)
			window := (1 << (10 + exp)) + (1<<(10+exp))/8*int(wd&7)
			if window > 128*1024 {
				t.Errorf("%d: window %d > 128 KiB", n, window)
			}
		}
	}
}

func TestZlibTolerance(t *testing.T) {
	data := testText(20000, 9)
	out, ok, err := Compress(Zlib, data, 4096)
	if err != nil || !ok {
		t.Fatalf("Compress: ok=%v err=%v", ok, err)
	}
	// Like the kernel, the Adler-32 trailer is not checked.
	bad := bytes.Clone(out)
	bad[len(bad)-1] ^= 0xff
	if got, err := Decompress(Zlib, bad, len(data), 4096); err != nil || !bytes.Equal(got, data) {
		t.Errorf("bad adler32: err=%v", err)
	}
	if got, err := Decompress(Zlib, out[:len(out)-4], len(data), 4096); err != nil || !bytes.Equal(got, data) {
		t.Errorf("missing adler32: err=%v", err)
	}
	// A stream cut short of ramBytes is an error (the kernel returns EIO).
	if _, err := Decompress(Zlib, out[:len(out)/2], len(data), 4096); err == nil {
		t.Error("truncated stream accepted")
	}
	// But enough of it to fill ramBytes is fine.
	if _, err := Decompress(Zlib, out[:len(out)/2], 100, 4096); err != nil {
		t.Errorf("truncated stream, short output: %v", err)
	}
	for _, hdr := range [][2]byte{{0x78, 0x5f}, {0x79, 0x5e}, {0x88, 0x1c}, {0x78, 0xbb}} {
		b := append(hdr[:], out[2:]...)
		if _, err := Decompress(Zlib, b, len(data), 4096); err == nil || !strings.HasPrefix(err.Error(), "zlib: ") {
			t.Errorf("header %x: err=%v", hdr, err)
		}
	}
}

func TestLZOFraming(t *testing.T) {
	data := testText(3*4096+100, 11)
	out, ok, err := Compress(LZO, data, 4096)
	if err != nil || !ok {
		t.Fatalf("Compress: ok=%v err=%v", ok, err)
	}
	if got := binary.LittleEndian.Uint32(out); int(got) != len(out) {
		t.Fatalf("header %d, output %d bytes", got, len(out))
	}
	// Walk segments: 4 of them, headers never straddle a sector.
	segs := 0
	for cur := 4; cur < len(out); {
		if cur/4096 != (cur+3)/4096 {
			t.Fatalf("segment header at %d straddles a sector", cur)
		}
		l := int(binary.LittleEndian.Uint32(out[cur:]))
		cur += 4 + l
		if left := 4096 - cur%4096; left < 4 {
			if !bytes.Equal(out[cur:cur+left], make([]byte, left)) {
				t.Fatal("padding not zero")
			}
			cur += left
		}
		segs++
	}
	if segs != 4 {
		t.Fatalf("%d segments, want 4", segs)
	}

	// A hand-made extent whose first segment ends 2 bytes before the
	// sector end, so the second header is in the next sector.
	litLen := 4096 - 4 - 4 - 2
	for len(lzoLiterals(make([]byte, litLen))) > 4096-4-4-2 {
		litLen--
	}
	seg1 := lzoLiterals(testRandom(litLen, 1))
	if len(seg1) != 4096-4-4-2 {
		t.Fatalf("seg1 is %d bytes", len(seg1))
	}
	seg2 := lzoLiterals([]byte("second segment"))
	var ext []byte
	ext = binary.LittleEndian.AppendUint32(ext, 0)
	ext = binary.LittleEndian.AppendUint32(ext, uint32(len(seg1)))
	ext = append(ext, seg1...)
	ext = append(ext, 0, 0) // padding
	ext = binary.LittleEndian.AppendUint32(ext, uint32(len(seg2)))
	ext = append(ext, seg2...)
	binary.LittleEndian.PutUint32(ext, uint32(len(ext)))
	want := append(testRandom(litLen, 1), "second segment"...)
	got, err := Decompress(LZO, pad(ext, 4096), len(want)+10, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:len(want)], want) || !bytes.Equal(got[len(want):], make([]byte, 10)) {
		t.Fatal("mismatch")
	}

	// Header checks.
	bad := pad(out, 4096)
	binary.LittleEndian.PutUint32(bad, uint32(len(bad)+1))
	if _, err := Decompress(LZO, bad, len(data), 4096); err == nil {
		t.Error("total length beyond extent accepted")
	}
	if _, err := Decompress(LZO, append(pad(out, 4096), make([]byte, 4096)...), len(data), 4096); err == nil {
		t.Error("unused trailing sector accepted")
	}
	if _, err := Decompress(LZO, out, len(data), 3000); err == nil {
		t.Error("bad sector size accepted")
	}
}

// lzoLiterals encodes b (len >= 4) as a single literal run plus end marker.
func lzoLiterals(b []byte) []byte {
	var out []byte
	if len(b) <= 238 {
		out = append(out, byte(17+len(b)))
	} else {
		out = lzoAppendCount(append(out, 0), len(b)-18)
	}
	out = append(out, b...)
	return append(out, 0x11, 0, 0)
}

func TestLZO1XDecoder(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
		err  error
	}{
		{"empty stream", []byte{0x11, 0, 0}, "", nil},
		{"too short", []byte{0x11, 0}, "", errLZOInputOverrun},
		{"first literals", []byte{17 + 3, 'a', 'b', 'c', 0x11, 0, 0}, "abc", nil},
		// 4 literals, then M2 length 4 distance 4, then end.
		{"m2", []byte{17 + 4, 'a', 'b', 'c', 'd', 3<<5 | 3<<2, 0, 0x11, 0, 0}, "abcdabcd", nil},
		// Overlapping M3 match: distance 1, length 10.
		{"m3 overlap", []byte{17 + 4, 'x', 'y', 'z', 'w', 32 | 8, 0, 0, 0x11, 0, 0}, "xyzw" + strings.Repeat("w", 10), nil},
		// Trailing literals in the low bits of a match, then a 2-byte M1.
		{"m1", []byte{17 + 4, 'a', 'b', 'c', 'd', 3<<5 | 3<<2 | 2, 0, 'e', 'f', 2 << 2, 0, 0x11, 0, 0}, "abcdabcdefde", nil},
		{"lookbehind", []byte{17 + 4, 'a', 'b', 'c', 'd', 3<<5 | 7<<2, 0, 0x11, 0, 0}, "", errLZOLookbehind},
		{"bad eof", []byte{17 + 4, 'a', 'b', 'c', 'd', 0x12, 0, 0}, "", errLZOBadEOF},
		{"trailing input", []byte{17 + 1, 'a', 0x11, 0, 0, 0}, "", errLZOInputNotConsumed},
		{"truncated literals", []byte{17 + 9, 'a', 'b', 'c', 0x11, 0, 0}, "", errLZOInputOverrun},
		{"no eof", []byte{17 + 4, 'a', 'b', 'c', 'd'}, "", errLZOInputOverrun},
		// LZO-RLE bitstream (version 1): 4 literals then a zero run of 4+3.
		{"rle", []byte{17, 1, 17 + 4, 'a', 'b', 'c', 'd', 0x18 | 3, 0xfc, 0xff, 0, 0x11, 0, 0}, "abcd" + strings.Repeat("\x00", 7), nil},
		// Same bytes without a version: a plain (far, hence invalid) M4.
		{"no rle in v0", []byte{17 + 4, 'a', 'b', 'c', 'd', 0x18 | 3, 0xfc, 0xff, 0x11, 0, 0}, "", errLZOLookbehind},
	}
	for _, tc := range tests {
		dst := make([]byte, 100)
		n, err := lzo1xDecompress(dst, tc.in)
		if err != tc.err {
			t.Errorf("%s: err=%v, want %v", tc.name, err, tc.err)
			continue
		}
		if err == nil && string(dst[:n]) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, dst[:n], tc.want)
		}
	}
	// A 3-byte match right after a literal run: distance
	// 0x801 + (t>>2) + (next byte << 2) = 0x801 + 1 + 4, one trailing literal.
	lits := testRandom(2100, 5)
	stream := append(lzoLiterals(lits)[:len(lzoLiterals(lits))-3], 1<<2|1, 1, 'Z', 0x11, 0, 0)
	want := append(bytes.Clone(lits), lits[len(lits)-0x806:len(lits)-0x806+3]...)
	want = append(want, 'Z')
	dst := make([]byte, 4096)
	if n, err := lzo1xDecompress(dst, stream); err != nil || !bytes.Equal(dst[:n], want) {
		t.Errorf("3-byte match after literal run: n=%d err=%v", n, err)
	}

	// Output bound.
	n, err := lzo1xDecompress(make([]byte, 5), []byte{17 + 4, 'a', 'b', 'c', 'd', 32 | 8, 0, 0, 0x11, 0, 0})
	if err != errLZOOutputOverrun {
		t.Errorf("output bound: n=%d err=%v", n, err)
	}
}

func TestDecompressErrors(t *testing.T) {
	garbage := testRandom(5000, 99)
	for _, alg := range allAlgs {
		for _, src := range [][]byte{nil, {1}, garbage, make([]byte, 4096)} {
			_, err := Decompress(alg, src, 4096, 4096)
			if err == nil {
				t.Errorf("%v: %d bytes accepted", alg, len(src))
				continue
			}
			if !strings.HasPrefix(err.Error(), alg.String()+": ") {
				t.Errorf("%v: error does not name the algorithm: %v", alg, err)
			}
		}
		if _, err := Decompress(alg, garbage, -1, 4096); err == nil {
			t.Errorf("%v: negative ramBytes accepted", alg)
		}
		if _, err := Decompress(alg, garbage, 1<<30, 4096); err == nil {
			t.Errorf("%v: huge ramBytes accepted", alg)
		}
	}
	if _, err := Decompress(Alg(9), nil, 10, 4096); err == nil {
		t.Error("unknown algorithm accepted")
	}
	if _, _, err := Compress(Alg(9), []byte("x"), 4096); err == nil {
		t.Error("unknown algorithm accepted by Compress")
	}
	if _, _, err := Compress(Zstd, make([]byte, 128*1024+1), 4096); err == nil {
		t.Error("oversized input accepted by Compress")
	}
	if out, ok, err := Compress(None, []byte("abc"), 4096); ok || out != nil || err != nil {
		t.Error("Compress(None) should be a no-op")
	}
	got, err := Decompress(None, []byte("abc"), 5, 4096)
	if err != nil || string(got) != "abc\x00\x00" {
		t.Errorf("Decompress(None): %q %v", got, err)
	}
}

func TestEmptyAndTiny(t *testing.T) {
	for _, alg := range allAlgs {
		out, ok, err := Compress(alg, nil, 4096)
		if ok || err != nil || out != nil {
			t.Errorf("%v: empty input: %v %v %v", alg, out, ok, err)
		}
		out, ok, err = Compress(alg, []byte{7}, 4096)
		if ok || err != nil {
			t.Errorf("%v: 1 byte input: %v %v %v", alg, out, ok, err)
		}
	}
}

func TestConcurrent(t *testing.T) {
	data := testMixed(100000, 77)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				alg := allAlgs[(g+i)%len(allAlgs)]
				in := data[i*1000 : i*1000+50000]
				out, ok, err := Compress(alg, in, 4096)
				if err != nil || !ok {
					t.Errorf("%v: ok=%v err=%v", alg, ok, err)
					return
				}
				got, err := Decompress(alg, out, len(in), 4096)
				if err != nil || !bytes.Equal(got, in) {
					t.Errorf("%v: round trip: %v", alg, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestParseAlg(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Alg
	}{
		{"zlib", Zlib}, {"lzo", LZO}, {"zstd", Zstd}, {"none", None}, {"no", None},
		{"zlib:3", Zlib}, {"zstd:15", Zstd}, {"zstd:-3", Zstd}, {"ZSTD", Zstd}, {" lzo ", LZO},
	} {
		got, err := ParseAlg(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseAlg(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "gzip", "lz4", ":3", "zlibx"} {
		if _, err := ParseAlg(bad); err == nil {
			t.Errorf("ParseAlg(%q) accepted", bad)
		}
	}
	for a, s := range map[Alg]string{None: "none", Zlib: "zlib", LZO: "lzo", Zstd: "zstd", 7: "unknown(7)"} {
		if a.String() != s {
			t.Errorf("%d.String() = %q", uint8(a), a.String())
		}
		if a <= Zstd {
			if p, err := ParseAlg(s); err != nil || p != a {
				t.Errorf("ParseAlg(String(%d)) = %v, %v", uint8(a), p, err)
			}
		}
	}
}
func BenchmarkCompress3000(b *testing.B) {
	data := testText(3000, 1)
	for _, alg := range allAlgs {
		b.Run(alg.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Compress(alg, data, 4096)
			}
		})
	}
}

func BenchmarkDecompress128K(b *testing.B) {
	data := testText(128*1024, 1)
	for _, alg := range allAlgs {
		out, _, _ := Compress(alg, data, 4096)
		b.Run(alg.String(), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				Decompress(alg, out, len(data), 4096)
			}
		})
	}
}
