// Package fileread reads file data extents from disk for every door: the
// read engine internal/fsread (and through it the library's FS and the
// read-only mount), fsops (and through it the read-write mount and RW), so
// that all of them verify the same way. It mirrors the
// read side of the kernel's inode.c and compression.c
// (btrfs_lookup_bio_sums, btrfs_check_read_bio / btrfs_data_csum_ok,
// repair from the other mirror, end_compressed_bio_read):
//
//   - every sector read is checked against its checksum in the csum tree the
//     caller passes (for a writer, the running transaction's tree, so
//     checksums added and not committed yet are seen);
//   - a sector that fails is read from the next copy (DUP, RAID1), with a
//     warning naming the copy used;
//   - a sector no copy holds intact is an error (a *DataError that satisfies
//     errors.Is(err, diskio.ErrCorrupt)) naming the inode, the file offset and
//     the logical address, and a warning saying the same;
//   - inodes with NODATASUM are not verified, as the kernel does not;
//   - compressed extents are verified on their on-disk (compressed) bytes,
//     then inflated.
//
// An Engine may cache verified sectors and inflated extents by logical
// address; only readers of an image that nobody changes while it is open ask
// for that (a writer reuses logical addresses).
package fileread
