package compress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdMaxWindow is 1 << ZSTD_BTRFS_MAX_WINDOWLOG: the kernel compresses with
// a window of at most 128 KiB and refuses to decode frames needing more.
const zstdMaxWindow = 1 << 17

const (
	zstdFrameMagic     = 0xFD2FB528
	zstdSkippableMask  = 0xFFFFFFF0
	zstdSkippableMagic = 0x184D2A50
)

var (
	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
	zstdEncErr  error

	zstdDecoders sync.Pool // of *zstd.Decoder in synchronous stream mode
)

// zstdEncoder returns the shared encoder: level "default" (about zstd level
// 3, the kernel's default), window 128 KiB, no checksum, no dictionary, a
// single frame with the content size recorded, as the kernel writes.
func zstdEncoder() (*zstd.Encoder, error) {
	zstdEncOnce.Do(func() {
		zstdEnc, zstdEncErr = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithWindowSize(zstdMaxWindow),
			zstd.WithEncoderCRC(false),
			zstd.WithLowerEncoderMem(true),
		)
	})
	return zstdEnc, zstdEncErr
}

func compressZstd(src []byte) ([]byte, error) {
	if len(src) == 0 {
		return nil, nil
	}
	enc, err := zstdEncoder()
	if err != nil {
		return nil, fmt.Errorf("zstd: creating encoder: %w", err)
	}
	return enc.EncodeAll(src, make([]byte, 0, len(src)/2+64)), nil
}

func getZstdDecoder() (*zstd.Decoder, error) {
	if v := zstdDecoders.Get(); v != nil {
		return v.(*zstd.Decoder), nil
	}
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1), // synchronous: no goroutines
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderLowmem(true),
	)
}

// decompressZstd decodes the first zstd frame of src. The kernel stops at the
// end of the first frame, so the zero padding after it (which a multi-frame
// decoder would reject as a bad magic number) is never looked at. Output
// stops at ramBytes; a frame that ends, or input that runs out, before that is
// zero-filled, as in the kernel.
func decompressZstd(src []byte, ramBytes int) ([]byte, error) {
	if len(src) < 4 {
		return nil, fmt.Errorf("zstd: %w: %d bytes", errShort, len(src))
	}
	frame := src
	if start, end, ok := zstdFirstFrame(src); ok {
		frame = src[start:end]
	} else if binary.LittleEndian.Uint32(src) != zstdFrameMagic {
		return nil, fmt.Errorf("zstd: no zstd frame at start of data (magic %#08x)", binary.LittleEndian.Uint32(src))
	}
	// Otherwise the frame could not be delimited (truncated or corrupt): let
	// the decoder produce what it can and report what is wrong.

	dec, err := getZstdDecoder()
	if err != nil {
		return nil, fmt.Errorf("zstd: creating decoder: %w", err)
	}
	if err := dec.Reset(bytes.NewReader(frame)); err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	out := make([]byte, ramBytes)
	_, err = io.ReadFull(dec, out)
	_ = dec.Reset(nil) // drop the reference to src before pooling
	zstdDecoders.Put(dec)
	switch {
	case err == nil:
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// Stream ended before ramBytes: the rest stays zero.
	default:
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return out, nil
}

// zstdFirstFrame finds the first (non-skippable) zstd frame in src by
// walking its header and block headers, without decoding. It returns the
// frame's bounds; ok is false if src does not hold a complete, well-formed
// frame layout.
func zstdFirstFrame(src []byte) (start, end int, ok bool) {
	pos := 0
	for {
		if len(src)-pos < 4 {
			return 0, 0, false
		}
		magic := binary.LittleEndian.Uint32(src[pos:])
		if magic&zstdSkippableMask == zstdSkippableMagic {
			if len(src)-pos < 8 {
				return 0, 0, false
			}
			size := uint64(binary.LittleEndian.Uint32(src[pos+4:]))
			if size > uint64(len(src)-pos-8) {
				return 0, 0, false
			}
			pos += 8 + int(size)
			continue
		}
		if magic != zstdFrameMagic {
			return 0, 0, false
		}
		break
	}
	start = pos
	p := pos + 4
	if p >= len(src) {
		return 0, 0, false
	}
	fhd := src[p]
	p++
	if fhd&0x08 != 0 { // reserved bit must be zero
		return 0, 0, false
	}
	single := fhd&0x20 != 0
	if !single {
		p++ // Window_Descriptor
	}
	p += [4]int{0, 1, 2, 4}[fhd&3] // Dictionary_ID
	// Frame_Content_Size
	switch fhd >> 6 {
	case 0:
		if single {
			p++
		}
	case 1:
		p += 2
	case 2:
		p += 4
	case 3:
		p += 8
	}
	for {
		if len(src)-p < 3 {
			return 0, 0, false
		}
		bh := uint32(src[p]) | uint32(src[p+1])<<8 | uint32(src[p+2])<<16
		p += 3
		size := int(bh >> 3)
		switch (bh >> 1) & 3 {
		case 0, 2: // raw, compressed
		case 1: // RLE: one byte on disk
			size = 1
		default: // reserved
			return 0, 0, false
		}
		if len(src)-p < size {
			return 0, 0, false
		}
		p += size
		if bh&1 != 0 {
			break
		}
	}
	if fhd&0x04 != 0 { // Content_Checksum
		if len(src)-p < 4 {
			return 0, 0, false
		}
		p += 4
	}
	return start, p, true
}
