package item

// Balance item sizes.
const (
	BalanceArgsSize = 136
	BalanceItemSize = 448
)

// BalanceArgs is struct btrfs_disk_balance_args: the filters of one chunk
// type. Usage and Limit are unions on disk: UsageMin/UsageMax and
// LimitMin/LimitMax are their low and high halves.
//
//	0 profiles 8 usage (usage_min u32, usage_max u32) 16 devid 24 pstart 32 pend
//	40 vstart 48 vend 56 target 64 flags 72 limit (limit_min u32, limit_max u32)
//	80 stripes_min u32 84 stripes_max u32 88 unused[6]
type BalanceArgs struct {
	Profiles   uint64
	Usage      uint64
	DevID      uint64
	PStart     uint64
	PEnd       uint64
	VStart     uint64
	VEnd       uint64
	Target     uint64
	Flags      uint64
	Limit      uint64
	StripesMin uint32
	StripesMax uint32
}

// UsageMin is the low half of the usage union.
func (a *BalanceArgs) UsageMin() uint32 { return uint32(a.Usage) }

// UsageMax is the high half of the usage union.
func (a *BalanceArgs) UsageMax() uint32 { return uint32(a.Usage >> 32) }

// LimitMin is the low half of the limit union.
func (a *BalanceArgs) LimitMin() uint32 { return uint32(a.Limit) }

// LimitMax is the high half of the limit union.
func (a *BalanceArgs) LimitMax() uint32 { return uint32(a.Limit >> 32) }

func (a *BalanceArgs) u64s() []*uint64 {
	return []*uint64{&a.Profiles, &a.Usage, &a.DevID, &a.PStart, &a.PEnd, &a.VStart, &a.VEnd,
		&a.Target, &a.Flags, &a.Limit}
}

func decodeBalanceArgs(b []byte) BalanceArgs {
	var a BalanceArgs
	decodeU64s(b, a.u64s())
	a.StripesMin = le.Uint32(b[80:])
	a.StripesMax = le.Uint32(b[84:])
	return a
}

func (a *BalanceArgs) encode(b []byte) {
	clear(b[:BalanceArgsSize])
	encodeU64s(b, a.u64s())
	le.PutUint32(b[80:], a.StripesMin)
	le.PutUint32(b[84:], a.StripesMax)
}

// BalanceItem is the balance item (key: BALANCE, TEMPORARY_ITEM, 0) of the
// root tree, kept while a balance is running or paused.
//
//	0 flags 8 data(136) 144 meta(136) 280 sys(136) 416 unused[4]
type BalanceItem struct {
	Flags uint64
	Data  BalanceArgs
	Meta  BalanceArgs
	Sys   BalanceArgs
}

// DecodeBalanceItem parses a balance item.
func DecodeBalanceItem(b []byte) (BalanceItem, error) {
	var x BalanceItem
	if len(b) < BalanceItemSize {
		return x, short("balance item", len(b), BalanceItemSize)
	}
	x.Flags = le.Uint64(b)
	x.Data = decodeBalanceArgs(b[8:])
	x.Meta = decodeBalanceArgs(b[8+BalanceArgsSize:])
	x.Sys = decodeBalanceArgs(b[8+2*BalanceArgsSize:])
	return x, nil
}

// Size is BalanceItemSize.
func (x *BalanceItem) Size() int { return BalanceItemSize }

// Encode writes the item into b (unused fields zeroed).
func (x *BalanceItem) Encode(b []byte) {
	clear(b[:BalanceItemSize])
	le.PutUint64(b, x.Flags)
	x.Data.encode(b[8:])
	x.Meta.encode(b[8+BalanceArgsSize:])
	x.Sys.encode(b[8+2*BalanceArgsSize:])
}

// Bytes encodes to a new slice.
func (x *BalanceItem) Bytes() []byte {
	b := make([]byte, BalanceItemSize)
	x.Encode(b)
	return b
}
