package scrub_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/blockdev"
	"github.com/gobtrfs/gobtrfs/internal/fsinfo"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/scrub"
	"github.com/gobtrfs/gobtrfs/internal/volume"
)

// TestScrubRepairStaysInPlace: a crafted chunk tree decides where --repair
// writes. Copy 2 of the metadata chunk is moved (in the chunk map, as a
// crafted chunk item would) past the end of the image, over the primary
// superblock, or over the data chunk; every tree block's copy 2 then reads
// bad, and a repair must not write there: the image keeps its size, its
// superblock and its file data.
func TestScrubRepairStaysInPlace(t *testing.T) {
	clean := dupImage(t)
	raw, err := os.ReadFile(clean)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// stripe1 is the new offset of the metadata chunk's second stripe,
		// given the fs tree root's offset in the chunk and the data chunk.
		stripe1 func(off uint64, data volume.Mapping) ondisk.PhysicalAddr
	}{
		{"past-end", func(uint64, volume.Mapping) ondisk.PhysicalAddr { return ondisk.PhysicalAddr(len(raw)) }},
		{"superblock", func(off uint64, _ volume.Mapping) ondisk.PhysicalAddr {
			return ondisk.SuperMirrorOffsets[0] - ondisk.PhysicalAddr(off) // wraps: the root's copy 2 is at 64 KiB
		}},
		{"data-chunk", func(off uint64, data volume.Mapping) ondisk.PhysicalAddr {
			return data.Chunk.Stripes[0].Offset - ondisk.PhysicalAddr(off)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			img := clean
			defer restoreBytes(t, img, raw)
			dev, err := blockdev.OpenFile(img, false)
			if err != nil {
				t.Fatal(err)
			}
			defer dev.Close()
			fi, err := fsinfo.Open(dev, fsinfo.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			ri, _, err := fi.RootItem(ondisk.FSTreeObjectID)
			if err != nil {
				t.Fatal(err)
			}
			meta, ok := fi.Chunks.Lookup(ri.Bytenr)
			if !ok || len(meta.Chunk.Stripes) != 2 {
				t.Fatalf("fs tree root %d: chunk %+v, want a DUP chunk", ri.Bytenr, meta)
			}
			var data volume.Mapping
			for _, m := range fi.Chunks.All() {
				if m.Chunk.Type&ondisk.BlockGroupData != 0 {
					data = m
				}
			}
			if data.Chunk.Length == 0 {
				t.Fatal("no data chunk")
			}
			dataLo := int64(data.Chunk.Stripes[0].Offset)
			dataBefore := append([]byte(nil), raw[dataLo:dataLo+int64(data.Chunk.Length)]...)
			ch := meta.Chunk
			ch.Stripes = append([]ondisk.Stripe(nil), ch.Stripes...)
			ch.Stripes[1].Offset = tc.stripe1(uint64(ri.Bytenr-meta.Logical), data)
			if err := fi.Chunks.Insert(meta.Logical, ch); err != nil {
				t.Fatal(err)
			}
			rep, err := scrub.Run(fi, scrub.Options{Repair: true})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Uncorrectable == 0 {
				t.Errorf("corrected %d, uncorrectable %d; want copies left unrepaired: %s", rep.Corrected, rep.Uncorrectable, rep.Summary())
			}
			found := false
			for _, e := range rep.Errors {
				found = found || strings.Contains(e.String(), "not repaired")
			}
			if !found && len(rep.Errors) > 0 {
				t.Errorf("no error says why it was not repaired; first: %s", rep.Errors[0])
			}
			after, err := os.ReadFile(img)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(raw) {
				t.Fatalf("repair changed the image size from %d to %d (wrote past its end)", len(raw), len(after))
			}
			sb := ondisk.SuperMirrorOffsets[0]
			if !bytes.Equal(after[sb:sb+ondisk.SuperInfoSize], raw[sb:sb+ondisk.SuperInfoSize]) {
				t.Error("repair overwrote the primary superblock")
			}
			if !bytes.Equal(after[dataLo:dataLo+int64(data.Chunk.Length)], dataBefore) {
				t.Error("repair overwrote the data chunk")
			}
		})
	}
}

// restoreBytes puts back the 4 KiB blocks of img that differ from raw and
// its size (cheaper than a fresh copy of the image per case).
func restoreBytes(t *testing.T, img string, raw []byte) {
	t.Helper()
	after, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for off := 0; off < len(raw); off += 4096 {
		end := min(off+4096, len(raw))
		if end > len(after) || !bytes.Equal(after[off:end], raw[off:end]) {
			if _, err := f.WriteAt(raw[off:end], int64(off)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Truncate(int64(len(raw))); err != nil {
		t.Fatal(err)
	}
}
