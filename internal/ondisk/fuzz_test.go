package ondisk

import (
	"bytes"
	"reflect"
	"testing"
)

// fuzzSuper is a plausible superblock with a two-stripe system chunk.
func fuzzSuper() []byte {
	s := &Superblock{Magic: SuperMagic, Bytenr: SuperMirrorOffsets[0], NodeSize: 16384, SectorSize: 4096,
		NumDevices: 1, Generation: 7, Root: 30605312, ChunkRoot: 22036480}
	s.SetSysChunks([]SysChunk{{
		Key: Key{ObjectID: FirstChunkTreeObjectID, Type: ChunkItemKey, Offset: 22020096},
		Chunk: Chunk{Length: 8 << 20, Owner: 2, StripeLen: 65536, Type: BlockGroupSystem | BlockGroupDup,
			IOAlign: 65536, IOWidth: 65536, SectorSize: 4096, NumStripes: 2, SubStripes: 1,
			Stripes: []Stripe{{DevID: 1, Offset: 22020096}, {DevID: 1, Offset: 30408704}}},
	}})
	return s.Encode()
}

// FuzzDecodeSuperblock checks that decoding a superblock and its
// sys_chunk_array never panics, that Encode gives back the very bytes
// decoded, and that the chunks round-trip through SetSysChunks.
func FuzzDecodeSuperblock(f *testing.F) {
	f.Add(fuzzSuper())
	f.Add(make([]byte, SuperInfoSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		sb, err := DecodeSuperblock(data)
		if err != nil {
			return
		}
		enc := sb.Encode()
		if !bytes.Equal(enc, data[:SuperInfoSize]) {
			t.Fatalf("Encode(DecodeSuperblock(b)) != b")
		}
		again, err := DecodeSuperblock(enc)
		if err != nil || again.Generation != sb.Generation || again.SysChunkArray != sb.SysChunkArray {
			t.Fatalf("superblock round trip: err %v", err)
		}
		chunks, err := sb.SysChunks()
		if err != nil {
			return
		}
		if err := again.SetSysChunks(chunks); err != nil {
			t.Fatalf("SetSysChunks of decoded chunks: %v", err)
		}
		chunks2, err := again.SysChunks()
		if err != nil || !reflect.DeepEqual(chunks, chunks2) {
			t.Fatalf("sys_chunk_array round trip: err %v\n%+v\n%+v", err, chunks, chunks2)
		}
	})
}
