// Package compress implements the three compression formats btrfs stores in
// file extents (zlib, LZO and zstd), in both directions, byte-compatible with
// what the Linux kernel reads and writes on disk.
//
// On-disk framing per algorithm (btrfs_file_extent_item.compression):
//
//   - zlib (1): one RFC 1950 zlib stream. The kernel inflates it as raw
//     deflate after checking the two header bytes, so the Adler-32 trailer is
//     not verified; anything after the final deflate block (trailer, zero
//     padding up to the sector size) is ignored.
//   - LZO (2): btrfs's own framing. A 4-byte little-endian total length
//     (including itself), then segments. Each segment is a 4-byte LE length
//     followed by that many bytes of LZO1X data that decode to at most one
//     sector. A segment header never straddles a sector boundary: when fewer
//     than 4 bytes remain in a sector they are zero padding and the next
//     header starts in the next sector. Inline extents use the same framing
//     with a single segment.
//   - zstd (3): one zstd frame (window at most 128 KiB, no dictionary, no
//     checksum as written by the kernel), followed by zero padding up to the
//     sector size. Only the first frame is decoded.
//
// All decoders are safe on arbitrary input: they never panic, never produce
// more than the requested number of bytes and report errors that name the
// algorithm.
package compress
