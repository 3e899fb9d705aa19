package fsops

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/gobtrfs/gobtrfs/internal/compress"
	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/ondisk/item"
)

const (
	// maxExtent is BTRFS_MAX_EXTENT_SIZE, the largest regular data extent.
	maxExtent = 128 << 20
	// maxCompressedChunk is BTRFS_MAX_UNCOMPRESSED: file bytes per compressed extent.
	maxCompressedChunk = 128 << 10
	// maxFileSize is MAX_LFS_FILESIZE.
	maxFileSize = 1<<63 - 1
)

// WriteAt writes data into file id at off, growing it as needed.
// mirrors btrfs_buffered_write followed by writeback (cow_file_range)
func (f *FS) WriteAt(id ID, off uint64, data []byte) (int, error) {
	err := f.run(func(o *op) error {
		x, err := o.writableInode(id)
		if err != nil {
			return err
		}
		if !isReg(x.Mode) {
			if isDir(x.Mode) {
				return errf(syscall.EISDIR, "write %v", id)
			}
			return errf(syscall.EINVAL, "write %v: not a regular file", id)
		}
		if err := o.write(id, x, off, data); err != nil {
			return err
		}
		return o.putInode(id, x)
	})
	if err != nil {
		return 0, err
	}
	return len(data), nil
}

// write changes the inode's data and size (the caller stores x).
func (o *op) write(id ID, x *item.InodeItem, off uint64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	end := off + uint64(len(data))
	if end < off || end > maxFileSize {
		return errf(syscall.EFBIG, "write %v at %d+%d", id, off, len(data))
	}
	newSize := max(x.Size, end)
	inl, err := o.inlineExtent(id)
	if err != nil {
		return err
	}
	if o.f.canInline(newSize) {
		empty := inl == nil && x.Size == 0
		if empty {
			has, err := o.hasExtents(id)
			if err != nil {
				return err
			}
			empty = !has
		}
		if inl != nil || empty {
			content := make([]byte, newSize)
			if inl != nil {
				old, err := o.inlineData(id, inl)
				if err != nil {
					return err
				}
				copy(content, old[:min(uint64(len(old)), x.Size)])
			}
			copy(content[off:], data)
			if err := o.replaceInline(id, x, inl, content); err != nil {
				return err
			}
			x.Size = newSize
			o.touch(x, true)
			return nil
		}
	}
	if inl != nil {
		if err := o.uninline(id, x, inl); err != nil {
			return err
		}
	}
	if err := o.writeRegular(id, x, off, data); err != nil {
		return err
	}
	if newSize > x.Size {
		oldEnd := alignUp(x.Size, o.f.sectorSize)
		x.Size = newSize
		if err := o.fillHoles(id, oldEnd, alignDown(off, o.f.sectorSize)); err != nil {
			return err
		}
	}
	o.touch(x, true)
	return nil
}

// writeRegular writes data at off as new extents covering whole sectors,
// reading back the parts of the first and last sector it does not change.
func (o *op) writeRegular(id ID, x *item.InodeItem, off uint64, data []byte) error {
	ss := o.f.sectorSize
	start := alignDown(off, ss)
	end := alignUp(off+uint64(len(data)), ss)
	buf := make([]byte, end-start)
	if off > start {
		head, err := o.readRange(id, x.Size, start, int(ss))
		if err != nil {
			return err
		}
		copy(buf, head)
	}
	if tail := off + uint64(len(data)); tail < end && (end-ss > start || off == start) {
		last, err := o.readRange(id, x.Size, end-ss, int(ss))
		if err != nil {
			return err
		}
		copy(buf[end-ss-start:], last)
	}
	copy(buf[off-start:], data)
	return o.writeBuf(id, x, start, buf)
}

// cowRange replaces the sector-aligned range at start with new extents
// holding buf. mirrors cow_file_range / compress_file_range
func (o *op) cowRange(id ID, x *item.InodeItem, start uint64, buf []byte) error {
	freed, err := o.dropExtents(id, start, start+uint64(len(buf)))
	if err != nil {
		return err
	}
	x.NBytes -= freed
	alg := o.f.compressionFor(x)
	for pos := 0; pos < len(buf); {
		if alg != compress.None {
			n := min(len(buf)-pos, maxCompressedChunk)
			done, err := o.writeCompressed(id, x, start+uint64(pos), buf[pos:pos+n], alg)
			if err != nil {
				return err
			}
			if done {
				pos += n
				continue
			}
		}
		n := min(len(buf)-pos, maxExtent)
		if alg != compress.None {
			n = min(n, maxCompressedChunk)
		}
		written, err := o.writeExtent(id, x, start+uint64(pos), buf[pos:pos+n])
		if err != nil {
			return err
		}
		pos += written
	}
	return nil
}

// allocData reserves a data extent of up to want bytes (at least one sector),
// settling for less when free space is fragmented.
func (o *op) allocData(want uint64) (ondisk.LogicalAddr, uint64, error) {
	ss := o.f.sectorSize
	for n := want; ; n = max(alignDown(n/2, ss), ss) {
		addr, err := o.h.AllocData(n)
		if err == nil {
			return addr, n, nil
		}
		if !errors.Is(err, syscall.ENOSPC) || n == ss {
			return 0, 0, fmt.Errorf("allocate %d bytes of data: %w", want, err)
		}
	}
}

// writeExtent writes an uncompressed extent at file offset off from the
// start of buf, as much as one allocation holds; it returns how much.
func (o *op) writeExtent(id ID, x *item.InodeItem, off uint64, buf []byte) (int, error) {
	addr, n, err := o.allocData(uint64(len(buf)))
	if err != nil {
		return 0, fmt.Errorf("write %v at %d: %w", id, off, err)
	}
	data := buf[:n]
	if err := o.putData(x, addr, data); err != nil {
		return 0, err
	}
	e := fext{off, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: n,
		Type: item.FileExtentReg, DiskBytenr: addr, DiskNumBytes: n, NumBytes: n}}
	if err := o.insertExtent(id, e); err != nil {
		return 0, err
	}
	x.NBytes += n
	return int(n), nil
}

// writeCompressed stores chunk compressed when that saves at least a sector;
// false means the caller writes it plain. mirrors compress_file_range
func (o *op) writeCompressed(id ID, x *item.InodeItem, off uint64, chunk []byte, alg compress.Alg) (bool, error) {
	ss := o.f.sectorSize
	out, ok, err := compress.Compress(alg, chunk, int(ss))
	if err != nil {
		return false, fmt.Errorf("compress %v at %d: %w", id, off, err)
	}
	if !ok || alignUp(uint64(len(out)), ss)+ss > alignUp(uint64(len(chunk)), ss) {
		return false, nil
	}
	disk := make([]byte, alignUp(uint64(len(out)), ss))
	copy(disk, out)
	addr, err := o.h.AllocData(uint64(len(disk)))
	if err != nil {
		return false, fmt.Errorf("write %v at %d: allocate: %w", id, off, err)
	}
	if err := o.putData(x, addr, disk); err != nil {
		return false, err
	}
	n := uint64(len(chunk))
	e := fext{off, item.FileExtentItem{Generation: ondisk.Generation(o.transid), RAMBytes: n,
		Compression: uint8(alg), Type: item.FileExtentReg, DiskBytenr: addr,
		DiskNumBytes: uint64(len(disk)), NumBytes: n}}
	if err := o.insertExtent(id, e); err != nil {
		return false, err
	}
	x.NBytes += n
	o.noteCompression(alg)
	return true, nil
}

// putData writes disk bytes and, unless the inode has NODATASUM, their checksums.
func (o *op) putData(x *item.InodeItem, addr ondisk.LogicalAddr, disk []byte) error {
	if err := o.h.WriteData(addr, disk); err != nil {
		return fmt.Errorf("write data at %d: %w", addr, err)
	}
	if x.Flags&item.InodeNoDataSum != 0 {
		return nil
	}
	if err := o.h.AddCsums(addr, disk); err != nil {
		return fmt.Errorf("checksum data at %d: %w", addr, err)
	}
	return nil
}

// compressionFor picks the algorithm for an inode's new extents.
// mirrors inode_need_compress
func (f *FS) compressionFor(x *item.InodeItem) compress.Alg {
	if x.Flags&(item.InodeNoDataCow|item.InodeNoDataSum|item.InodeNoCompress) != 0 {
		return compress.None
	}
	if f.opts.Compress == compress.None && x.Flags&item.InodeCompress != 0 {
		return compress.Zlib
	}
	return f.opts.Compress
}

// noteCompression sets the incompat flag an algorithm needs in the
// superblock the commit writes. mirrors btrfs_set_fs_incompat
func (o *op) noteCompression(alg compress.Alg) {
	var flag uint64
	switch alg {
	case compress.LZO:
		flag = ondisk.IncompatCompressLZO
	case compress.Zstd:
		flag = ondisk.IncompatCompressZstd
	default:
		return
	}
	if o.h.Super().IncompatFlags&flag == 0 {
		o.h.Super().IncompatFlags |= flag
	}
}
