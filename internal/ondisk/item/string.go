package item

// StringItem is a STRING_ITEM: raw bytes (used by tests and debugging).
type StringItem struct {
	Data []byte
}

// DecodeStringItem parses a string item (any size).
func DecodeStringItem(b []byte) (StringItem, error) { return StringItem{cloneBytes(b)}, nil }

// Size is the data size.
func (x *StringItem) Size() int { return len(x.Data) }

// Encode writes the data into b.
func (x *StringItem) Encode(b []byte) { copy(b, x.Data) }

// Bytes encodes to a new slice.
func (x *StringItem) Bytes() []byte { return append([]byte(nil), x.Data...) }
