package compress

import (
	"errors"
	"fmt"
	"strings"
)

// Alg is the on-disk value of btrfs_file_extent_item.compression.
type Alg uint8

// Compression algorithms, numbered as on disk.
const (
	None Alg = 0
	Zlib Alg = 1
	LZO  Alg = 2
	Zstd Alg = 3
)

const (
	// maxUncompressed is BTRFS_MAX_UNCOMPRESSED: the largest amount of file
	// data the kernel puts in one compressed extent. Compress refuses more.
	maxUncompressed = 128 * 1024

	// maxCompressed is BTRFS_MAX_COMPRESSED: the largest compressed extent.
	maxCompressed = 128 * 1024

	// maxRAMBytes bounds the ramBytes argument of Decompress. The kernel
	// never writes a compressed extent with ram_bytes above 128 KiB; a larger
	// value comes from a corrupt item and must not make us allocate without
	// limit. The bound is generous so that only nonsense is rejected.
	maxRAMBytes = 1 << 20
)

// String returns the name used by the kernel's mount options and properties.
func (a Alg) String() string {
	switch a {
	case None:
		return "none"
	case Zlib:
		return "zlib"
	case LZO:
		return "lzo"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", uint8(a))
}

// ParseAlg parses an algorithm name as accepted by the compress= mount
// option or the compression property: "zlib", "lzo", "zstd" or "none"
// ("no" is accepted as a synonym for "none"). A level suffix such as
// "zlib:3" or "zstd:-5" is accepted and ignored. Case is ignored.
func ParseAlg(s string) (Alg, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "none", "no":
		return None, nil
	case "zlib":
		return Zlib, nil
	case "lzo":
		return LZO, nil
	case "zstd":
		return Zstd, nil
	}
	return None, fmt.Errorf("compress: unknown compression algorithm %q", s)
}

// Decompress decodes one compressed extent's bytes (as stored on disk,
// possibly with trailing zero padding up to the sector size) into exactly
// ramBytes bytes of output. sectorSize is the filesystem sector size; the LZO
// segment layout depends on it (it is not used by zlib and zstd).
//
// If the stream ends before ramBytes bytes were produced the rest is
// zero-filled, as the kernel does; data beyond ramBytes is ignored. ramBytes
// must be in [0, 1 MiB]. For None the input is copied (and truncated or
// zero-extended to ramBytes).
func Decompress(alg Alg, src []byte, ramBytes int, sectorSize int) ([]byte, error) {
	if ramBytes < 0 || ramBytes > maxRAMBytes {
		return nil, fmt.Errorf("%v: invalid decompressed size %d (must be 0..%d)", alg, ramBytes, maxRAMBytes)
	}
	switch alg {
	case None:
		out := make([]byte, ramBytes)
		copy(out, src)
		return out, nil
	case Zlib:
		return decompressZlib(src, ramBytes)
	case LZO:
		return decompressLZO(src, ramBytes, sectorSize)
	case Zstd:
		return decompressZstd(src, ramBytes)
	}
	return nil, fmt.Errorf("compress: unsupported compression type %d", uint8(alg))
}

// Compress encodes src the way the kernel does for a file extent (at most
// 128 KiB of file data). It returns ok=false, with no error, when the result
// would not be smaller than src, in which case the caller stores the data
// uncompressed, like the kernel. For LZO it also gives up, like the kernel,
// when after more than two sectors of input the output is already larger
// than the input consumed.
//
// The returned bytes are what goes on disk before padding to the sector size
// (the caller pads regular extents with zeros). Note that for regular
// extents the kernel additionally requires that compression saves at least
// one sector after rounding (round_up(len(out), sectorSize) + sectorSize <=
// round_up(len(src), sectorSize)); that decision is left to the caller.
//
// For None it returns ok=false.
func Compress(alg Alg, src []byte, sectorSize int) (out []byte, ok bool, err error) {
	if len(src) > maxUncompressed {
		return nil, false, fmt.Errorf("%v: input of %d bytes exceeds the %d byte limit of a compressed extent", alg, len(src), maxUncompressed)
	}
	switch alg {
	case None:
		return nil, false, nil
	case Zlib:
		out, err = compressZlib(src)
	case LZO:
		return compressLZO(src, sectorSize)
	case Zstd:
		out, err = compressZstd(src)
	default:
		return nil, false, fmt.Errorf("compress: unsupported compression type %d", uint8(alg))
	}
	if err != nil {
		return nil, false, err
	}
	if len(out) >= len(src) {
		return nil, false, nil
	}
	return out, true, nil
}

// checkSectorSize validates a sector size: a power of two from 512 to 64 KiB.
func checkSectorSize(alg Alg, sectorSize int) error {
	if sectorSize < 512 || sectorSize > 64*1024 || sectorSize&(sectorSize-1) != 0 {
		return fmt.Errorf("%v: invalid sector size %d", alg, sectorSize)
	}
	return nil
}

// errShort is wrapped by decoders for inputs too short to hold a header.
var errShort = errors.New("input too short")
