package compress

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"sync"
)

// zlibLevel is the kernel's default zlib level (BTRFS_ZLIB_DEFAULT_LEVEL).
const zlibLevel = 3

var zlibWriters = sync.Pool{
	New: func() any {
		w, err := zlib.NewWriterLevel(io.Discard, zlibLevel)
		if err != nil {
			panic(err) // level is a valid constant
		}
		return w
	},
}

var flateReaders sync.Pool // of io.ReadCloser implementing flate.Resetter

// compressZlib produces a complete zlib stream (header, deflate data,
// Adler-32), as zlib_deflate with Z_FINISH does in the kernel.
func compressZlib(src []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(src)/2 + 64)
	w := zlibWriters.Get().(*zlib.Writer)
	defer zlibWriters.Put(w)
	w.Reset(&buf)
	if _, err := w.Write(src); err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	return buf.Bytes(), nil
}

// decompressZlib mirrors the kernel: the two header bytes are checked (method
// deflate, window at most 32 KiB, valid check bits, no preset dictionary) and
// the rest is inflated as raw deflate, so the Adler-32 trailer is neither
// required nor verified and trailing padding is ignored. Decoding stops once
// ramBytes bytes were produced. A stream that ends (final block seen) early is
// zero-filled; a stream that is cut off or corrupt before ramBytes bytes is an
// error.
func decompressZlib(src []byte, ramBytes int) ([]byte, error) {
	if len(src) < 2 {
		return nil, fmt.Errorf("zlib: %w: %d bytes", errShort, len(src))
	}
	cmf, flg := src[0], src[1]
	switch {
	case cmf&0x0f != 8:
		return nil, fmt.Errorf("zlib: invalid header: compression method %d, want 8 (deflate)", cmf&0x0f)
	case cmf>>4 > 7:
		return nil, fmt.Errorf("zlib: invalid header: window size exponent %d too large", cmf>>4)
	case (uint16(cmf)<<8|uint16(flg))%31 != 0:
		return nil, fmt.Errorf("zlib: invalid header: check bits wrong (%#02x %#02x)", cmf, flg)
	case flg&0x20 != 0:
		return nil, errors.New("zlib: stream needs a preset dictionary")
	}

	br := bytes.NewReader(src[2:])
	var fr io.ReadCloser
	if v := flateReaders.Get(); v != nil {
		fr = v.(io.ReadCloser)
		if err := fr.(flate.Resetter).Reset(br, nil); err != nil {
			return nil, fmt.Errorf("zlib: %w", err)
		}
	} else {
		fr = flate.NewReader(br)
	}
	defer flateReaders.Put(fr)

	out := make([]byte, ramBytes)
	n := 0
	for stalls := 0; n < len(out); {
		m, err := fr.Read(out[n:])
		n += m
		if err == io.EOF {
			break // final block done: the rest stays zero
		}
		if err != nil {
			return nil, fmt.Errorf("zlib: corrupt or truncated stream after %d output bytes: %w", n, err)
		}
		if m == 0 {
			if stalls++; stalls > 100 {
				return nil, errors.New("zlib: decoder makes no progress")
			}
		}
	}
	return out, nil
}
