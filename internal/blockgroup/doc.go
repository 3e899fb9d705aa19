// Package blockgroup keeps the block groups of an open filesystem in memory:
// their used bytes (what BLOCK_GROUP_ITEMs say), their free space (loaded
// from the free space tree, or derived from the extent tree when there is
// none), space pinned until the running transaction commits, and new chunks
// (the kernel's block-group.c, space-info.c and the chunk allocation part
// of volumes.c).
//
// # Space accounting
//
// Every byte of a block group is in exactly one state:
//
//	free      may be allocated now
//	reserved  allocated in this transaction; its extent item is not inserted yet
//	used      its extent item exists (the BLOCK_GROUP_ITEM's used)
//	pinned    freed in this transaction; reusable once the transaction committed
//	super     holds a superblock copy; never allocated
//
// Allocation moves free to reserved; running the delayed refs moves reserved
// to used (extent inserted) and used to pinned (last reference dropped);
// commit moves pinned to free. An extent allocated and released in the same
// transaction before it was ever written goes straight back to free.
package blockgroup
