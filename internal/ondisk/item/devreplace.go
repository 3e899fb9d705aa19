package item

// DevReplaceSize is the size of struct btrfs_dev_replace_item.
const DevReplaceSize = 72

// Device replace states.
const (
	DevReplaceNeverStarted = 0
	DevReplaceStarted      = 1
	DevReplaceFinished     = 2
	DevReplaceCanceled     = 3
	DevReplaceSuspended    = 4
)

// DevReplace is the DEV_REPLACE item (key: 0, DEV_REPLACE, 0) of the device
// tree: the state of a running or finished device replace.
//
//	0 src_devid 8 cursor_left 16 cursor_right 24 cont_reading_from_srcdev_mode
//	32 replace_state 40 time_started 48 time_stopped 56 num_write_errors
//	64 num_uncorrectable_read_errors
type DevReplace struct {
	SrcDevID                   uint64
	CursorLeft                 uint64
	CursorRight                uint64
	ContReadingFromSrcdevMode  uint64
	ReplaceState               uint64
	TimeStarted                uint64
	TimeStopped                uint64
	NumWriteErrors             uint64
	NumUncorrectableReadErrors uint64
}

func (x *DevReplace) fields() []*uint64 {
	return []*uint64{&x.SrcDevID, &x.CursorLeft, &x.CursorRight, &x.ContReadingFromSrcdevMode,
		&x.ReplaceState, &x.TimeStarted, &x.TimeStopped, &x.NumWriteErrors, &x.NumUncorrectableReadErrors}
}

// DecodeDevReplace parses a dev replace item.
func DecodeDevReplace(b []byte) (DevReplace, error) {
	var x DevReplace
	if len(b) < DevReplaceSize {
		return x, short("dev replace item", len(b), DevReplaceSize)
	}
	decodeU64s(b, x.fields())
	return x, nil
}

// Size is DevReplaceSize.
func (x *DevReplace) Size() int { return DevReplaceSize }

// Encode writes the item into b.
func (x *DevReplace) Encode(b []byte) { encodeU64s(b, x.fields()) }

// Bytes encodes to a new slice.
func (x *DevReplace) Bytes() []byte {
	b := make([]byte, DevReplaceSize)
	x.Encode(b)
	return b
}
