package item

// Qgroup item sizes. The status item grew enable_gen with simple quotas.
const (
	QgroupStatusSize   = 32
	QgroupStatusSizeV2 = 40
	QgroupInfoSize     = 40
	QgroupLimitSize    = 40
)

// Qgroup status flags.
const (
	QgroupStatusFlagOn           = 1 << 0
	QgroupStatusFlagRescan       = 1 << 1
	QgroupStatusFlagInconsistent = 1 << 2
	QgroupStatusFlagSimpleMode   = 1 << 3
)

// QgroupStatus is the QGROUP_STATUS item (key: 0, QGROUP_STATUS, 0) of the
// quota tree.
//
//	0 version 8 generation 16 flags 24 rescan [32 enable_gen]
type QgroupStatus struct {
	Version    uint64
	Generation uint64
	Flags      uint64
	Rescan     uint64
	// EnableGen is present (HasEnableGen) in items of QgroupStatusSizeV2 bytes.
	EnableGen    uint64
	HasEnableGen bool
}

// DecodeQgroupStatus parses a qgroup status item.
func DecodeQgroupStatus(b []byte) (QgroupStatus, error) {
	var x QgroupStatus
	if len(b) < QgroupStatusSize {
		return x, short("qgroup status", len(b), QgroupStatusSize)
	}
	x.Version, x.Generation, x.Flags, x.Rescan = le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:])
	if len(b) >= QgroupStatusSizeV2 {
		x.EnableGen, x.HasEnableGen = le.Uint64(b[32:]), true
	}
	return x, nil
}

// Size is the encoded size.
func (x *QgroupStatus) Size() int {
	if x.HasEnableGen {
		return QgroupStatusSizeV2
	}
	return QgroupStatusSize
}

// Encode writes the item into b (at least x.Size() bytes).
func (x *QgroupStatus) Encode(b []byte) {
	le.PutUint64(b[0:], x.Version)
	le.PutUint64(b[8:], x.Generation)
	le.PutUint64(b[16:], x.Flags)
	le.PutUint64(b[24:], x.Rescan)
	if x.HasEnableGen {
		le.PutUint64(b[32:], x.EnableGen)
	}
}

// Bytes encodes to a new slice.
func (x *QgroupStatus) Bytes() []byte {
	b := make([]byte, x.Size())
	x.Encode(b)
	return b
}

// QgroupInfo is a QGROUP_INFO item (key: 0, QGROUP_INFO, qgroupid).
//
//	0 generation 8 rfer 16 rfer_cmpr 24 excl 32 excl_cmpr
type QgroupInfo struct {
	Generation           uint64
	Referenced           uint64
	ReferencedCompressed uint64
	Exclusive            uint64
	ExclusiveCompressed  uint64
}

func (x *QgroupInfo) fields() []*uint64 {
	return []*uint64{&x.Generation, &x.Referenced, &x.ReferencedCompressed, &x.Exclusive, &x.ExclusiveCompressed}
}

// DecodeQgroupInfo parses a qgroup info item.
func DecodeQgroupInfo(b []byte) (QgroupInfo, error) {
	var x QgroupInfo
	if len(b) < QgroupInfoSize {
		return x, short("qgroup info", len(b), QgroupInfoSize)
	}
	decodeU64s(b, x.fields())
	return x, nil
}

// Size is QgroupInfoSize.
func (x *QgroupInfo) Size() int { return QgroupInfoSize }

// Encode writes the item into b.
func (x *QgroupInfo) Encode(b []byte) { encodeU64s(b, x.fields()) }

// Bytes encodes to a new slice.
func (x *QgroupInfo) Bytes() []byte {
	b := make([]byte, QgroupInfoSize)
	x.Encode(b)
	return b
}

// Qgroup limit flags.
const (
	QgroupLimitMaxRfer  = 1 << 0
	QgroupLimitMaxExcl  = 1 << 1
	QgroupLimitRsvRfer  = 1 << 2
	QgroupLimitRsvExcl  = 1 << 3
	QgroupLimitRferCmpr = 1 << 4
	QgroupLimitExclCmpr = 1 << 5
)

// QgroupLimit is a QGROUP_LIMIT item (key: 0, QGROUP_LIMIT, qgroupid).
//
//	0 flags 8 max_rfer 16 max_excl 24 rsv_rfer 32 rsv_excl
type QgroupLimit struct {
	Flags         uint64
	MaxReferenced uint64
	MaxExclusive  uint64
	RsvReferenced uint64
	RsvExclusive  uint64
}

func (x *QgroupLimit) fields() []*uint64 {
	return []*uint64{&x.Flags, &x.MaxReferenced, &x.MaxExclusive, &x.RsvReferenced, &x.RsvExclusive}
}

// DecodeQgroupLimit parses a qgroup limit item.
func DecodeQgroupLimit(b []byte) (QgroupLimit, error) {
	var x QgroupLimit
	if len(b) < QgroupLimitSize {
		return x, short("qgroup limit", len(b), QgroupLimitSize)
	}
	decodeU64s(b, x.fields())
	return x, nil
}

// Size is QgroupLimitSize.
func (x *QgroupLimit) Size() int { return QgroupLimitSize }

// Encode writes the item into b.
func (x *QgroupLimit) Encode(b []byte) { encodeU64s(b, x.fields()) }

// Bytes encodes to a new slice.
func (x *QgroupLimit) Bytes() []byte {
	b := make([]byte, QgroupLimitSize)
	x.Encode(b)
	return b
}

// QgroupLevel and QgroupSubvolID split a qgroup id ("level/subvolid").
func QgroupLevel(id uint64) uint16    { return uint16(id >> 48) }
func QgroupSubvolID(id uint64) uint64 { return id & (1<<48 - 1) }

func decodeU64s(b []byte, fs []*uint64) {
	for i, f := range fs {
		*f = le.Uint64(b[i*8:])
	}
}

func encodeU64s(b []byte, fs []*uint64) {
	for i, f := range fs {
		le.PutUint64(b[i*8:], *f)
	}
}

// QgroupRelation is a QGROUP_RELATION item (key: qgroup, QGROUP_RELATION,
// other qgroup). It has no data.
type QgroupRelation struct{}

// DecodeQgroupRelation accepts a qgroup relation item (no data is read).
func DecodeQgroupRelation(b []byte) (QgroupRelation, error) { return QgroupRelation{}, nil }

// Size is 0.
func (QgroupRelation) Size() int { return 0 }

// Encode writes nothing.
func (QgroupRelation) Encode(b []byte) {}

// Bytes returns an empty slice.
func (QgroupRelation) Bytes() []byte { return []byte{} }
