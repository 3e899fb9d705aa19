package compress

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// LZO1X bitstream, as produced by LZO1X-1 and read by the kernel's
// lzo1x_decompress_safe. Instructions are selected by the first byte t and
// by "state", the number of literals copied right after the previous
// instruction (0..3, or 4 after a literal run):
//
//	t >= 64        M2 match: length (t>>5)+1 (3..8), distance
//	               1 + ((t>>2)&7) + (next byte << 3); t&3 trailing literals
//	32 <= t < 64   M3 match: length (t&31)+2, or if zero 33 + extended count;
//	               then le16 d: distance 1 + d>>2, d&3 trailing literals
//	16 <= t < 32   M4 match: length (t&7)+2, or if zero 9 + extended count;
//	               then le16 d: distance 0x4000 + (t&8)<<11 + d>>2, d&3
//	               trailing literals; distance exactly 0x4000 is end of
//	               stream (only valid as the 3 bytes 0x11 0x00 0x00)
//	t < 16, state 0    literal run of t+3 bytes, or if zero 18 + extended
//	t < 16, state 1..3 2-byte match at distance 1 + t>>2 + (next byte << 2)
//	t < 16, state 4    3-byte match at distance 0x801 + t>>2 + (next << 2)
//
// An extended count is a run of zero bytes (255 each) then a nonzero byte.
// The first byte of a stream may instead be 17+n (n >= 1): n literals.
// A stream that starts with 17 and is at least 5 bytes long carries a
// bitstream version byte next (the kernel's LZO-RLE extension); version >= 1
// enables zero runs encoded as M4 with t&0xf8 == 0x18 and d&0xfffc == 0xfffc.

var (
	errLZOInputOverrun     = errors.New("input overrun")
	errLZOOutputOverrun    = errors.New("output overrun")
	errLZOLookbehind       = errors.New("match distance before start of output (lookbehind overrun)")
	errLZOInputNotConsumed = errors.New("data after end-of-stream marker (input not consumed)")
	errLZOBadEOF           = errors.New("malformed end-of-stream marker")
)

const (
	lzoMinZeroRun       = 4 // shortest zero run of the LZO-RLE extension
	lzoM2MaxOffset      = 0x0800
	lzoM3MaxOffset      = 0x4000
	lzoM2MaxLen         = 8
	lzoM3MaxLen         = 33
	lzoM4MaxLen         = 9
	lzoM3Marker    byte = 32
	lzoM4Marker    byte = 16
)

// lzo1xDecompress decodes one LZO1X stream into dst, which bounds the output
// size, and returns the number of bytes produced. It makes the same checks
// as the kernel's lzo1x_decompress_safe (the whole input must be consumed,
// ending with the 3-byte end marker; at least 3 input bytes must follow every
// literal copy) and bounds-checks every access.
func lzo1xDecompress(dst, in []byte) (int, error) {
	ip, op := 0, 0
	if len(in) < 3 {
		return 0, errLZOInputOverrun
	}
	version := byte(0)
	if len(in) >= 5 && in[0] == 17 {
		version = in[1]
		ip = 2
	}

	// needIn reports whether n more input bytes are available.
	needIn := func(n int) bool { return n >= 0 && len(in)-ip >= n }
	needOut := func(n int) bool { return n >= 0 && len(dst)-op >= n }
	copyLiterals := func(n int) error {
		if !needOut(n) {
			return errLZOOutputOverrun
		}
		// The kernel insists that at least 3 bytes (the shortest
		// instruction, e.g. the end marker) follow a literal copy.
		if !needIn(n + 3) {
			return errLZOInputOverrun
		}
		op += copy(dst[op:], in[ip:ip+n])
		ip += n
		return nil
	}
	// extCount reads an extended length: zero bytes worth 255 each, then a
	// nonzero byte; it returns 255*zeros + the final byte.
	extCount := func() (int, error) {
		zeros := 0
		for {
			if ip >= len(in) {
				return 0, errLZOInputOverrun
			}
			if in[ip] != 0 {
				break
			}
			ip++
			zeros++
		}
		v := zeros*255 + int(in[ip])
		ip++
		return v, nil
	}

	state := 0
	if in[ip] > 17 {
		t := int(in[ip]) - 17
		ip++
		if err := copyLiterals(t); err != nil {
			return op, err
		}
		if t < 4 {
			state = t
		} else {
			state = 4
		}
	}

	for {
		var t, mpos, mlen, next int
		if ip >= len(in) {
			return op, errLZOInputOverrun
		}
		t = int(in[ip])
		ip++
		switch {
		case t < 16 && state == 0: // literal run
			if t == 0 {
				c, err := extCount()
				if err != nil {
					return op, err
				}
				t = 15 + c
			}
			if err := copyLiterals(t + 3); err != nil {
				return op, err
			}
			state = 4
			continue

		case t < 16 && state != 4: // 2-byte match after 1..3 literals
			if !needIn(1) {
				return op, errLZOInputOverrun
			}
			next = t & 3
			mpos = op - 1 - t>>2 - int(in[ip])<<2
			ip++
			mlen = 2

		case t < 16: // 3-byte match after a literal run
			if !needIn(1) {
				return op, errLZOInputOverrun
			}
			next = t & 3
			mpos = op - (1 + lzoM2MaxOffset) - t>>2 - int(in[ip])<<2
			ip++
			mlen = 3

		case t >= 64: // M2
			if !needIn(1) {
				return op, errLZOInputOverrun
			}
			next = t & 3
			mpos = op - 1 - (t>>2)&7 - int(in[ip])<<3
			ip++
			mlen = t>>5 + 1

		case t >= 32: // M3
			mlen = t&31 + 2
			if mlen == 2 {
				c, err := extCount()
				if err != nil {
					return op, err
				}
				mlen += 31 + c
			}
			if !needIn(2) {
				return op, errLZOInputOverrun
			}
			d := int(binary.LittleEndian.Uint16(in[ip:]))
			ip += 2
			mpos = op - 1 - d>>2
			next = d & 3

		default: // M4, zero run or end of stream
			if !needIn(2) {
				return op, errLZOInputOverrun
			}
			d := int(binary.LittleEndian.Uint16(in[ip:]))
			if d&0xfffc == 0xfffc && t&0xf8 == 0x18 && version != 0 {
				if !needIn(3) {
					return op, errLZOInputOverrun
				}
				run := (t&7 | int(in[ip+2])<<3) + lzoMinZeroRun
				if !needOut(run) {
					return op, errLZOOutputOverrun
				}
				clear(dst[op : op+run])
				op += run
				ip += 3
				next = d & 3
				mlen = 0
				mpos = op // nothing to copy
				break
			}
			mpos = op - (t&8)<<11
			mlen = t&7 + 2
			if mlen == 2 {
				c, err := extCount()
				if err != nil {
					return op, err
				}
				mlen += 7 + c
				if !needIn(2) {
					return op, errLZOInputOverrun
				}
				d = int(binary.LittleEndian.Uint16(in[ip:]))
			}
			ip += 2
			mpos -= d >> 2
			next = d & 3
			if mpos == op {
				switch {
				case mlen != 3:
					return op, errLZOBadEOF
				case ip == len(in):
					return op, nil
				default:
					return op, errLZOInputNotConsumed
				}
			}
			mpos -= 0x4000
		}

		if mlen > 0 {
			if mpos < 0 {
				return op, errLZOLookbehind
			}
			if !needOut(mlen) {
				return op, errLZOOutputOverrun
			}
			if op-mpos >= mlen {
				copy(dst[op:op+mlen], dst[mpos:mpos+mlen])
			} else {
				// Overlapping: byte by byte repeats the pattern.
				for i := range mlen {
					dst[op+i] = dst[mpos+i]
				}
			}
			op += mlen
		}

		// Copy the 0..3 literals that follow the match.
		state = next
		if next > 0 {
			if err := copyLiterals(next); err != nil {
				return op, err
			}
		} else if !needIn(3) {
			return op, errLZOInputOverrun
		}
	}
}

// LZO1X-1 compression parameters.
const (
	lzoDictBits = 13
	lzoDictSize = 1 << lzoDictBits
	lzoHashMul  = 0x1824429d
	// lzoMaxBlock is the span matched within at once (M4 max offset + 1);
	// the dictionary is cleared between blocks.
	lzoMaxBlock = 0xbfff + 1
	// Inputs of at most this many bytes are emitted as literals only, and
	// matches are not started in the last this-many bytes of a block.
	lzoTail = 20
)

// lzoEncoder is an LZO1X-1 compressor: greedy matching through a hash table
// of 4-byte sequences, with the search step growing over incompressible data.
// It follows the same choices as the kernel's lzo1x_1_compress, so its output
// is normally byte-identical to what the kernel writes.
type lzoEncoder struct {
	dict [lzoDictSize]uint16
}

// compress appends the LZO1X encoding of src (including the end-of-stream
// marker) to dst.
func (e *lzoEncoder) compress(dst, src []byte) []byte {
	start := len(dst)
	pending := 0 // literals not yet emitted, ending at the current block start
	pos := 0
	for len(src)-pos > lzoTail {
		blk := min(len(src)-pos, lzoMaxBlock)
		clear(e.dict[:])
		dst, pending = e.block(dst, src, pos, pos+blk, pending, start)
		pos += blk
	}
	pending += len(src) - pos
	if pending > 0 {
		if len(dst) == start && pending <= 238 {
			dst = append(dst, byte(17+pending))
		} else {
			dst = lzoAppendLiteralHeader(dst, pending, start)
		}
		dst = append(dst, src[len(src)-pending:]...)
	}
	return append(dst, lzoM4Marker|1, 0, 0)
}

// lzoAppendLiteralHeader appends the instruction introducing n literals
// (the literal bytes themselves are appended by the caller). Runs of 1..3
// literals are encoded in the low bits of the previous match instruction.
func lzoAppendLiteralHeader(dst []byte, n, start int) []byte {
	switch {
	case n <= 3 && len(dst)-start >= 2:
		dst[len(dst)-2] |= byte(n)
	case n <= 3:
		// Never reached (a stream's first literals are at least 4 long or
		// use the 17+n form); kept so no input can make this misbehave.
		dst = append(dst, byte(17+n))
	case n <= 18:
		dst = append(dst, byte(n-3))
	default:
		dst = lzoAppendCount(append(dst, 0), n-18)
	}
	return dst
}

// lzoAppendCount appends an extended count c >= 1: a zero byte per 255 and
// a final nonzero byte.
func lzoAppendCount(dst []byte, c int) []byte {
	for c > 255 {
		c -= 255
		dst = append(dst, 0)
	}
	return append(dst, byte(c))
}

// block compresses src[bstart:bend], matching only within it; pending
// literals before bstart are emitted with the first match. It returns the
// number of literals left pending at bend.
func (e *lzoEncoder) block(dst, src []byte, bstart, bend, pending, start int) ([]byte, int) {
	ipEnd := bend - lzoTail
	ii := bstart // first byte not yet emitted (after accounting for pending)
	ip := bstart
	if pending < 4 {
		ip += 4 - pending
	}
	for {
		// No match here: advance, faster the longer the literal run.
		ip += 1 + (ip-ii)>>5
		for {
			if ip >= ipEnd {
				return dst, bend - (ii - pending)
			}
			dv := binary.LittleEndian.Uint32(src[ip:])
			h := (dv * lzoHashMul) >> (32 - lzoDictBits) & (lzoDictSize - 1)
			mpos := bstart + int(e.dict[h])
			e.dict[h] = uint16(ip - bstart)
			if dv != binary.LittleEndian.Uint32(src[mpos:]) {
				break
			}

			// Emit the literals before the match.
			ii -= pending
			pending = 0
			if n := ip - ii; n > 0 {
				dst = lzoAppendLiteralHeader(dst, n, start)
				dst = append(dst, src[ii:ip]...)
			}

			// Extend the match 8 bytes at a time. Once the verified
			// length reaches ipEnd the search stops without looking at
			// the last (partly differing) word, as the kernel does.
			mlen := 4
			v := binary.LittleEndian.Uint64(src[ip+mlen:]) ^ binary.LittleEndian.Uint64(src[mpos+mlen:])
			hitEnd := false
			for v == 0 {
				mlen += 8
				v = binary.LittleEndian.Uint64(src[ip+mlen:]) ^ binary.LittleEndian.Uint64(src[mpos+mlen:])
				if ip+mlen >= ipEnd {
					hitEnd = true
					break
				}
			}
			if !hitEnd {
				mlen += bits.TrailingZeros64(v) / 8
			}

			off := ip - mpos
			ip += mlen
			dst = lzoAppendMatch(dst, mlen, off)
			ii = ip
		}
	}
}

// lzoAppendMatch appends a match instruction of length mlen (>= 3) at
// distance off (1..0xbfff), with zero trailing literals.
func lzoAppendMatch(dst []byte, mlen, off int) []byte {
	switch {
	case mlen <= lzoM2MaxLen && off <= lzoM2MaxOffset:
		off--
		return append(dst, byte((mlen-1)<<5|(off&7)<<2), byte(off>>3))
	case off <= lzoM3MaxOffset:
		off--
		if mlen <= lzoM3MaxLen {
			dst = append(dst, lzoM3Marker|byte(mlen-2))
		} else {
			dst = lzoAppendCount(append(dst, lzoM3Marker), mlen-lzoM3MaxLen)
		}
		return append(dst, byte(off<<2), byte(off>>6))
	default:
		off -= 0x4000
		if mlen <= lzoM4MaxLen {
			dst = append(dst, lzoM4Marker|byte((off>>11)&8)|byte(mlen-2))
		} else {
			dst = lzoAppendCount(append(dst, lzoM4Marker|byte((off>>11)&8)), mlen-lzoM4MaxLen)
		}
		return append(dst, byte(off<<2), byte(off>>6))
	}
}
