package ondisk

import (
	"encoding/binary"
	"fmt"
)

// Superblock constants.
const (
	SuperInfoSize           = 4096
	SuperMagic              = 0x4D5F53665248425F // "_BHRfS_M"
	SysChunkArraySize       = 2048
	NumBackupRoots          = 4
	BackupRootSize          = 168
	DevItemSize             = 98
	LabelSize               = 256
	SuperFlagSeeding        = 1 << 32
	SuperFlagMetadump       = 1 << 33
	SuperFlagMetadumpV2     = 1 << 34
	SuperFlagChangingFsidV2 = 1 << 36
)

// SuperMirrorOffsets are the byte offsets of the primary superblock and its mirrors.
var SuperMirrorOffsets = [...]PhysicalAddr{64 << 10, 64 << 20, 256 << 30}

// DevItem is struct btrfs_dev_item (98 bytes).
type DevItem struct {
	DevID       DevID
	TotalBytes  uint64
	BytesUsed   uint64
	IOAlign     uint32
	IOWidth     uint32
	SectorSize  uint32
	Type        uint64
	Generation  Generation
	StartOffset uint64
	DevGroup    uint32
	SeekSpeed   uint8
	Bandwidth   uint8
	UUID        UUID
	FSID        UUID
}

// DecodeDevItem parses a dev item from b (at least DevItemSize bytes).
func DecodeDevItem(b []byte) DevItem {
	var d DevItem
	d.DevID = DevID(binary.LittleEndian.Uint64(b[0:]))
	d.TotalBytes = binary.LittleEndian.Uint64(b[8:])
	d.BytesUsed = binary.LittleEndian.Uint64(b[16:])
	d.IOAlign = binary.LittleEndian.Uint32(b[24:])
	d.IOWidth = binary.LittleEndian.Uint32(b[28:])
	d.SectorSize = binary.LittleEndian.Uint32(b[32:])
	d.Type = binary.LittleEndian.Uint64(b[36:])
	d.Generation = Generation(binary.LittleEndian.Uint64(b[44:]))
	d.StartOffset = binary.LittleEndian.Uint64(b[52:])
	d.DevGroup = binary.LittleEndian.Uint32(b[60:])
	d.SeekSpeed = b[64]
	d.Bandwidth = b[65]
	copy(d.UUID[:], b[66:82])
	copy(d.FSID[:], b[82:98])
	return d
}

// Encode writes the dev item into b.
func (d *DevItem) Encode(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], uint64(d.DevID))
	binary.LittleEndian.PutUint64(b[8:], d.TotalBytes)
	binary.LittleEndian.PutUint64(b[16:], d.BytesUsed)
	binary.LittleEndian.PutUint32(b[24:], d.IOAlign)
	binary.LittleEndian.PutUint32(b[28:], d.IOWidth)
	binary.LittleEndian.PutUint32(b[32:], d.SectorSize)
	binary.LittleEndian.PutUint64(b[36:], d.Type)
	binary.LittleEndian.PutUint64(b[44:], uint64(d.Generation))
	binary.LittleEndian.PutUint64(b[52:], d.StartOffset)
	binary.LittleEndian.PutUint32(b[60:], d.DevGroup)
	b[64] = d.SeekSpeed
	b[65] = d.Bandwidth
	copy(b[66:82], d.UUID[:])
	copy(b[82:98], d.FSID[:])
}

// BackupRoot is struct btrfs_root_backup (168 bytes).
type BackupRoot struct {
	TreeRoot, TreeRootGen     uint64
	ChunkRoot, ChunkRootGen   uint64
	ExtentRoot, ExtentRootGen uint64
	FSRoot, FSRootGen         uint64
	DevRoot, DevRootGen       uint64
	CsumRoot, CsumRootGen     uint64
	TotalBytes, BytesUsed     uint64
	NumDevices                uint64
	TreeRootLevel             uint8
	ChunkRootLevel            uint8
	ExtentRootLevel           uint8
	FSRootLevel               uint8
	DevRootLevel              uint8
	CsumRootLevel             uint8
}

func (r *BackupRoot) fields() []*uint64 {
	return []*uint64{&r.TreeRoot, &r.TreeRootGen, &r.ChunkRoot, &r.ChunkRootGen, &r.ExtentRoot,
		&r.ExtentRootGen, &r.FSRoot, &r.FSRootGen, &r.DevRoot, &r.DevRootGen, &r.CsumRoot,
		&r.CsumRootGen, &r.TotalBytes, &r.BytesUsed, &r.NumDevices}
}

func (r *BackupRoot) levels() []*uint8 {
	return []*uint8{&r.TreeRootLevel, &r.ChunkRootLevel, &r.ExtentRootLevel, &r.FSRootLevel,
		&r.DevRootLevel, &r.CsumRootLevel}
}

func decodeBackupRoot(b []byte) BackupRoot {
	var r BackupRoot
	for i, f := range r.fields() {
		*f = binary.LittleEndian.Uint64(b[i*8:])
	}
	for i, l := range r.levels() {
		*l = b[152+i]
	}
	return r
}

func (r *BackupRoot) encode(b []byte) {
	for i, f := range r.fields() {
		binary.LittleEndian.PutUint64(b[i*8:], *f)
	}
	for i, l := range r.levels() {
		b[152+i] = *l
	}
}

// Superblock is struct btrfs_super_block. Raw keeps all 4096 bytes so that
// fields this type does not model survive a decode/encode round trip.
type Superblock struct {
	Csum                [CsumSize]byte             // 0x00
	FSID                UUID                       // 0x20
	Bytenr              PhysicalAddr               // 0x30
	Flags               uint64                     // 0x38
	Magic               uint64                     // 0x40
	Generation          Generation                 // 0x48
	Root                LogicalAddr                // 0x50
	ChunkRoot           LogicalAddr                // 0x58
	LogRoot             LogicalAddr                // 0x60
	LogRootTransid      uint64                     // 0x68
	TotalBytes          uint64                     // 0x70
	BytesUsed           uint64                     // 0x78
	RootDirObjectID     ObjectID                   // 0x80
	NumDevices          uint64                     // 0x88
	SectorSize          uint32                     // 0x90
	NodeSize            uint32                     // 0x94
	LeafSize            uint32                     // 0x98
	StripeSize          uint32                     // 0x9c
	SysChunkArraySize   uint32                     // 0xa0
	ChunkRootGeneration Generation                 // 0xa4
	CompatFlags         uint64                     // 0xac
	CompatROFlags       uint64                     // 0xb4
	IncompatFlags       uint64                     // 0xbc
	CsumType            uint16                     // 0xc4
	RootLevel           uint8                      // 0xc6
	ChunkRootLevel      uint8                      // 0xc7
	LogRootLevel        uint8                      // 0xc8
	DevItem             DevItem                    // 0xc9
	Label               [LabelSize]byte            // 0x12b
	CacheGeneration     uint64                     // 0x22b
	UUIDTreeGeneration  uint64                     // 0x233
	MetadataUUID        UUID                       // 0x23b
	NrGlobalRoots       uint64                     // 0x24b
	SysChunkArray       [SysChunkArraySize]byte    // 0x32b
	BackupRoots         [NumBackupRoots]BackupRoot // 0xb2b
	Raw                 [SuperInfoSize]byte
}

// Field offsets used by Decode/Encode.
const (
	offSysChunkArray = 0x32b
	offBackupRoots   = 0xb2b
)

// DecodeSuperblock parses a 4096-byte superblock. It checks only the size;
// the caller checks magic and checksum.
func DecodeSuperblock(b []byte) (*Superblock, error) {
	if len(b) < SuperInfoSize {
		return nil, fmt.Errorf("superblock: %d bytes, need %d", len(b), SuperInfoSize)
	}
	s := &Superblock{}
	copy(s.Raw[:], b)
	le := binary.LittleEndian
	copy(s.Csum[:], b[0:32])
	copy(s.FSID[:], b[0x20:0x30])
	s.Bytenr = PhysicalAddr(le.Uint64(b[0x30:]))
	s.Flags = le.Uint64(b[0x38:])
	s.Magic = le.Uint64(b[0x40:])
	s.Generation = Generation(le.Uint64(b[0x48:]))
	s.Root = LogicalAddr(le.Uint64(b[0x50:]))
	s.ChunkRoot = LogicalAddr(le.Uint64(b[0x58:]))
	s.LogRoot = LogicalAddr(le.Uint64(b[0x60:]))
	s.LogRootTransid = le.Uint64(b[0x68:])
	s.TotalBytes = le.Uint64(b[0x70:])
	s.BytesUsed = le.Uint64(b[0x78:])
	s.RootDirObjectID = ObjectID(le.Uint64(b[0x80:]))
	s.NumDevices = le.Uint64(b[0x88:])
	s.SectorSize = le.Uint32(b[0x90:])
	s.NodeSize = le.Uint32(b[0x94:])
	s.LeafSize = le.Uint32(b[0x98:])
	s.StripeSize = le.Uint32(b[0x9c:])
	s.SysChunkArraySize = le.Uint32(b[0xa0:])
	s.ChunkRootGeneration = Generation(le.Uint64(b[0xa4:]))
	s.CompatFlags = le.Uint64(b[0xac:])
	s.CompatROFlags = le.Uint64(b[0xb4:])
	s.IncompatFlags = le.Uint64(b[0xbc:])
	s.CsumType = le.Uint16(b[0xc4:])
	s.RootLevel = b[0xc6]
	s.ChunkRootLevel = b[0xc7]
	s.LogRootLevel = b[0xc8]
	s.DevItem = DecodeDevItem(b[0xc9:])
	copy(s.Label[:], b[0x12b:0x22b])
	s.CacheGeneration = le.Uint64(b[0x22b:])
	s.UUIDTreeGeneration = le.Uint64(b[0x233:])
	copy(s.MetadataUUID[:], b[0x23b:0x24b])
	s.NrGlobalRoots = le.Uint64(b[0x24b:])
	copy(s.SysChunkArray[:], b[offSysChunkArray:offSysChunkArray+SysChunkArraySize])
	for i := range s.BackupRoots {
		s.BackupRoots[i] = decodeBackupRoot(b[offBackupRoots+i*BackupRootSize:])
	}
	return s, nil
}

// Encode returns the 4096-byte superblock (checksum as stored in s.Csum;
// the caller recomputes it).
func (s *Superblock) Encode() []byte {
	b := make([]byte, SuperInfoSize)
	copy(b, s.Raw[:])
	le := binary.LittleEndian
	copy(b[0:32], s.Csum[:])
	copy(b[0x20:0x30], s.FSID[:])
	le.PutUint64(b[0x30:], uint64(s.Bytenr))
	le.PutUint64(b[0x38:], s.Flags)
	le.PutUint64(b[0x40:], s.Magic)
	le.PutUint64(b[0x48:], uint64(s.Generation))
	le.PutUint64(b[0x50:], uint64(s.Root))
	le.PutUint64(b[0x58:], uint64(s.ChunkRoot))
	le.PutUint64(b[0x60:], uint64(s.LogRoot))
	le.PutUint64(b[0x68:], s.LogRootTransid)
	le.PutUint64(b[0x70:], s.TotalBytes)
	le.PutUint64(b[0x78:], s.BytesUsed)
	le.PutUint64(b[0x80:], uint64(s.RootDirObjectID))
	le.PutUint64(b[0x88:], s.NumDevices)
	le.PutUint32(b[0x90:], s.SectorSize)
	le.PutUint32(b[0x94:], s.NodeSize)
	le.PutUint32(b[0x98:], s.LeafSize)
	le.PutUint32(b[0x9c:], s.StripeSize)
	le.PutUint32(b[0xa0:], s.SysChunkArraySize)
	le.PutUint64(b[0xa4:], uint64(s.ChunkRootGeneration))
	le.PutUint64(b[0xac:], s.CompatFlags)
	le.PutUint64(b[0xb4:], s.CompatROFlags)
	le.PutUint64(b[0xbc:], s.IncompatFlags)
	le.PutUint16(b[0xc4:], s.CsumType)
	b[0xc6] = s.RootLevel
	b[0xc7] = s.ChunkRootLevel
	b[0xc8] = s.LogRootLevel
	s.DevItem.Encode(b[0xc9:])
	copy(b[0x12b:0x22b], s.Label[:])
	le.PutUint64(b[0x22b:], s.CacheGeneration)
	le.PutUint64(b[0x233:], s.UUIDTreeGeneration)
	copy(b[0x23b:0x24b], s.MetadataUUID[:])
	le.PutUint64(b[0x24b:], s.NrGlobalRoots)
	copy(b[offSysChunkArray:], s.SysChunkArray[:])
	for i := range s.BackupRoots {
		s.BackupRoots[i].encode(b[offBackupRoots+i*BackupRootSize:])
	}
	return b
}

// LabelString returns the label up to its first NUL.
func (s *Superblock) LabelString() string {
	for i, c := range s.Label {
		if c == 0 {
			return string(s.Label[:i])
		}
	}
	return string(s.Label[:])
}

// MetadataFSID is the fsid written into tree block headers: metadata_uuid
// when the METADATA_UUID incompat flag is set, fsid otherwise.
func (s *Superblock) MetadataFSID() UUID {
	if s.IncompatFlags&IncompatMetadataUUID != 0 {
		return s.MetadataUUID
	}
	return s.FSID
}

// SysChunk is one (key, chunk) entry of sys_chunk_array.
type SysChunk struct {
	Key   Key
	Chunk Chunk
}

// SysChunks parses sys_chunk_array.
func (s *Superblock) SysChunks() ([]SysChunk, error) {
	n := int(s.SysChunkArraySize)
	if n > SysChunkArraySize {
		return nil, fmt.Errorf("sys_chunk_array_size %d exceeds %d", n, SysChunkArraySize)
	}
	arr := s.SysChunkArray[:n]
	var out []SysChunk
	for p := 0; p < n; {
		if n-p < KeySize {
			return nil, fmt.Errorf("sys_chunk_array: truncated key at byte %d", p)
		}
		k := DecodeKey(arr[p:])
		p += KeySize
		if k.Type != ChunkItemKey {
			return nil, fmt.Errorf("sys_chunk_array: key %v at byte %d is not a CHUNK_ITEM", k, p-KeySize)
		}
		c, err := DecodeChunk(arr[p:])
		if err != nil {
			return nil, fmt.Errorf("sys_chunk_array at byte %d: %w", p, err)
		}
		p += c.Size()
		out = append(out, SysChunk{k, c})
	}
	return out, nil
}

// SetSysChunks encodes chunks into sys_chunk_array.
func (s *Superblock) SetSysChunks(cs []SysChunk) error {
	var buf [SysChunkArraySize]byte
	p := 0
	for _, c := range cs {
		if p+KeySize+c.Chunk.Size() > SysChunkArraySize {
			return fmt.Errorf("sys_chunk_array full")
		}
		c.Key.Encode(buf[p:])
		p += KeySize
		c.Chunk.Encode(buf[p:])
		p += c.Chunk.Size()
	}
	s.SysChunkArray = buf
	s.SysChunkArraySize = uint32(p)
	return nil
}
