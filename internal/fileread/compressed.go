package fileread

import (
	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/datacsum"
)

// maxCompressedDisk bounds the on-disk size of a compressed extent read
// whole (the kernel writes at most 128 KiB).
const maxCompressedDisk = 1 << 20

// readCompressed serves p from the inflated whole extent.
func (en *Engine) readCompressed(in Inode, sums *datacsum.Tree, e *Extent, p []byte, off uint64) error {
	data, err := en.inflated(in, sums, e)
	if err != nil {
		return err
	}
	rel := e.Offset + (off - e.Start)
	c := 0
	if rel < uint64(len(data)) {
		c = copy(p, data[rel:])
	}
	clear(p[c:])
	return nil
}

// inflated returns the whole decompressed disk extent of e: its
// disk_num_bytes are read (and verified: csums cover the compressed bytes)
// and inflated to ram_bytes. mirrors btrfs_submit_compressed_read + end_compressed_bio_read
func (en *Engine) inflated(in Inode, sums *datacsum.Tree, e *Extent) ([]byte, error) {
	key := decompKey{e.DiskBytenr, e.DiskNumBytes, e.RAMBytes, e.Compression}
	if en.decomp != nil {
		if d := en.decomp.get(key); d != nil {
			return d, nil
		}
	}
	ss := en.ss
	if e.DiskNumBytes == 0 || e.DiskNumBytes > maxCompressedDisk || uint64(e.DiskBytenr)%ss != 0 {
		return nil, in.errAt(e.Start, uint64(e.DiskBytenr), corruptf("compressed extent of %d disk bytes", e.DiskNumBytes))
	}
	raw := make([]byte, (e.DiskNumBytes+ss-1)&^(ss-1))
	var err error
	if sums != nil {
		err = en.readVerified(in, sums, raw, e.Start, e.DiskBytenr)
	} else {
		err = en.readAnyCopy(in, raw, e.Start, uint64(e.DiskBytenr))
	}
	if err != nil {
		return nil, err
	}
	out, err := compress.Decompress(compress.Alg(e.Compression), raw[:e.DiskNumBytes], int(e.RAMBytes), int(ss))
	if err != nil {
		return nil, in.errAt(e.Start, uint64(e.DiskBytenr), corruptf("decompress: %w", err))
	}
	if en.decomp != nil {
		en.decomp.put(key, out)
	}
	return out, nil
}
