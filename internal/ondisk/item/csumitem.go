package item

// ExtentCsum is an EXTENT_CSUM item (key: EXTENT_CSUM, EXTENT_CSUM, first
// logical byte): the checksums of consecutive sectors, csum size bytes each.
type ExtentCsum struct {
	Sums []byte
}

// DecodeExtentCsum parses a checksum item; any size is accepted here (use
// Count to check it against the checksum size).
func DecodeExtentCsum(b []byte) (ExtentCsum, error) {
	return ExtentCsum{Sums: cloneBytes(b)}, nil
}

// Count is the number of whole checksums of csumSize bytes.
func (c *ExtentCsum) Count(csumSize int) int {
	if csumSize <= 0 {
		return 0
	}
	return len(c.Sums) / csumSize
}

// Sum returns the i-th checksum.
func (c *ExtentCsum) Sum(i, csumSize int) []byte {
	return c.Sums[i*csumSize : (i+1)*csumSize]
}

// Size is the encoded size.
func (c *ExtentCsum) Size() int { return len(c.Sums) }

// Encode writes the checksums into b.
func (c *ExtentCsum) Encode(b []byte) { copy(b, c.Sums) }

// Bytes encodes to a new slice.
func (c *ExtentCsum) Bytes() []byte { return append([]byte(nil), c.Sums...) }
