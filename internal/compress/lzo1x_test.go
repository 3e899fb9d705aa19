package compress

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testdata/lzo1x holds inputs (*.bin) and their compression by liblzo2's
// lzo1x_999_compress (*.lzo999). That compressor uses every instruction
// form of the format, including ones LZO1X-1 never emits (2-byte matches
// after trailing literals, 3-byte matches after a literal run, far M4
// matches), so these streams exercise paths our own encoder cannot.
func lzo1xVectors(t testing.TB) (names []string, ins, streams [][]byte) {
	files, err := filepath.Glob(filepath.Join("testdata", "lzo1x", "*.lzo999"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no LZO1X vectors: %v", err)
	}
	for _, f := range files {
		stream, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in, err := os.ReadFile(strings.TrimSuffix(f, ".lzo999") + ".bin")
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(f))
		ins = append(ins, in)
		streams = append(streams, stream)
	}
	return names, ins, streams
}

func TestLZO1XReferenceVectors(t *testing.T) {
	names, ins, streams := lzo1xVectors(t)
	for i, name := range names {
		dst := make([]byte, len(ins[i]))
		n, err := lzo1xDecompress(dst, streams[i])
		if err != nil || !bytes.Equal(dst[:n], ins[i]) {
			t.Errorf("%s: n=%d/%d err=%v", name, n, len(ins[i]), err)
		}
		if _, err := lzo1xDecompress(dst[:len(dst)-1], streams[i]); err != errLZOOutputOverrun {
			t.Errorf("%s: one byte short of output: err=%v", name, err)
		}
		for _, cut := range []int{1, 3, len(streams[i]) / 2} {
			if _, err := lzo1xDecompress(dst, streams[i][:len(streams[i])-cut]); err == nil {
				t.Errorf("%s: stream cut by %d accepted", name, cut)
			}
		}
		// Our encoder's output of the same data decodes too.
		var enc lzoEncoder
		ours := enc.compress(nil, ins[i])
		n, err = lzo1xDecompress(dst, ours)
		if err != nil || !bytes.Equal(dst[:n], ins[i]) {
			t.Errorf("%s: own encoding: err=%v", name, err)
		}
	}
}

// TestLZOEncoderLargeBlocks covers inputs longer than one 48 KiB matching
// block (64 KiB sectors) and long matches and literal runs.
func TestLZOEncoderLargeBlocks(t *testing.T) {
	var enc lzoEncoder
	for _, in := range [][]byte{
		testMixed(65536, 8),
		testRandom(65536, 9),
		make([]byte, 65536),
		append(testRandom(50000, 10), testRandom(50000, 10)...), // far repeat across blocks
	} {
		out := enc.compress(nil, in)
		if len(out) > lzoWorstCompress(len(in)) {
			t.Errorf("%d bytes compressed to %d, above worst case", len(in), len(out))
		}
		dst := make([]byte, len(in))
		n, err := lzo1xDecompress(dst, out)
		if err != nil || n != len(in) || !bytes.Equal(dst, in) {
			t.Fatalf("%d bytes: n=%d err=%v", len(in), n, err)
		}
	}
}

// FuzzLZO1X feeds raw LZO1X streams to the decoder (the btrfs framing's
// header checks would otherwise reject most mutations before reaching it).
// Whatever decodes is re-encoded and must decode back to the same bytes.
func FuzzLZO1X(f *testing.F) {
	_, ins, streams := lzo1xVectors(f)
	var enc lzoEncoder
	for i := range streams {
		f.Add(streams[i])
		f.Add(enc.compress(nil, ins[i][:min(len(ins[i]), 4096)]))
	}
	f.Add([]byte{0x11, 0, 0})
	f.Add([]byte{17, 1, 17 + 4, 'a', 'b', 'c', 'd', 0x18 | 3, 0xfc, 0xff, 0, 0x11, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		dst := make([]byte, 64*1024)
		n, err := lzo1xDecompress(dst, data)
		if n < 0 || n > len(dst) {
			t.Fatalf("n=%d", n)
		}
		if err != nil {
			return
		}
		var enc lzoEncoder
		again := make([]byte, n)
		m, err := lzo1xDecompress(again, enc.compress(nil, dst[:n]))
		if err != nil || m != n || !bytes.Equal(again, dst[:n]) {
			t.Fatalf("re-encoding %d decoded bytes: m=%d err=%v", n, m, err)
		}
	})
}
