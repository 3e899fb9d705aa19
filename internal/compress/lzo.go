package compress

import (
	"encoding/binary"
	"fmt"
	"sync"
)

// btrfs LZO framing (fs/btrfs/lzo.c):
//
//	le32 total length of the compressed data, including this header
//	repeated: le32 segment length, then that many bytes of LZO1X data that
//	          decode to at most one sector of file data
//
// A segment header never crosses a sector boundary: if fewer than 4 bytes
// are left in the sector after a segment's data, they are zero padding and
// counted in the total length. Segment data may cross sector boundaries.

// lzoLenSize is the size of the total and segment length fields (LZO_LEN).
const lzoLenSize = 4

// lzoWorstCompress is lzo1x_worst_compress(n): the largest LZO1X output for
// n input bytes, and the decode buffer the kernel uses for one segment.
func lzoWorstCompress(n int) int { return n + n/16 + 64 + 3 }

func roundUp(n, align int) int { return (n + align - 1) / align * align }

func decompressLZO(src []byte, ramBytes, sectorSize int) ([]byte, error) {
	if err := checkSectorSize(LZO, sectorSize); err != nil {
		return nil, err
	}
	if len(src) < lzoLenSize {
		return nil, fmt.Errorf("lzo: %w for the length header: %d bytes", errShort, len(src))
	}
	total := binary.LittleEndian.Uint32(src)
	// Same sanity checks as the kernel: the recorded length fits in the
	// extent and in BTRFS_MAX_COMPRESSED, and the extent has no sector
	// beyond the recorded length.
	if uint64(total) > uint64(len(src)) || total > maxCompressed {
		return nil, fmt.Errorf("lzo: invalid header: total length %d, compressed extent is %d bytes", total, len(src))
	}
	if roundUp(int(total), sectorSize) < len(src) && len(src)%sectorSize == 0 {
		return nil, fmt.Errorf("lzo: invalid header: total length %d leaves sectors of the %d byte extent unused", total, len(src))
	}

	out := make([]byte, ramBytes)
	n := 0
	seg := make([]byte, lzoWorstCompress(sectorSize))
	for cur := lzoLenSize; cur < int(total) && n < ramBytes; {
		if len(src)-cur < lzoLenSize {
			return nil, fmt.Errorf("lzo: segment header at offset %d truncated", cur)
		}
		segLen := binary.LittleEndian.Uint32(src[cur:])
		cur += lzoLenSize
		if uint64(segLen) > uint64(len(src)-cur) {
			return nil, fmt.Errorf("lzo: segment at offset %d has length %d, only %d bytes left", cur-lzoLenSize, segLen, len(src)-cur)
		}
		m, err := lzo1xDecompress(seg, src[cur:cur+int(segLen)])
		if err != nil {
			return nil, fmt.Errorf("lzo: segment at offset %d (length %d): %w", cur-lzoLenSize, segLen, err)
		}
		n += copy(out[n:], seg[:m])
		cur += int(segLen)
		if left := sectorSize - cur%sectorSize; left < lzoLenSize {
			cur += left // zero padding: the next header starts in the next sector
		}
	}
	return out, nil
}

var lzoEncoders = sync.Pool{New: func() any { return new(lzoEncoder) }}

func compressLZO(src []byte, sectorSize int) ([]byte, bool, error) {
	if err := checkSectorSize(LZO, sectorSize); err != nil {
		return nil, false, err
	}
	if len(src) == 0 {
		return nil, false, nil
	}
	enc := lzoEncoders.Get().(*lzoEncoder)
	defer lzoEncoders.Put(enc)

	out := make([]byte, lzoLenSize, lzoLenSize+len(src)+len(src)/16+64)
	var seg []byte
	for cur := 0; cur < len(src); {
		// One segment per sector of input.
		inLen := min(sectorSize, len(src)-cur)
		seg = enc.compress(seg[:0], src[cur:cur+inLen])
		out = binary.LittleEndian.AppendUint32(out, uint32(len(seg)))
		out = append(out, seg...)
		if left := roundUp(len(out), sectorSize) - len(out); left > 0 && left < lzoLenSize {
			out = append(out, make([]byte, left)...)
		}
		cur += inLen
		// The kernel gives up once the output is larger than the input
		// after more than two sectors.
		if cur > 2*sectorSize && cur < len(out) {
			return nil, false, nil
		}
		if len(out) > maxCompressed {
			return nil, false, nil
		}
	}
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	if len(out) >= len(src) {
		return nil, false, nil
	}
	return out, true, nil
}
