// Package txn runs the writer's transactions: it hands out handles that
// join the running transaction, allocates the tree blocks the B-tree write
// path asks for, and commits a transaction as a new generation on disk
// (the kernel's transaction.c, with the allocation glue of extent-tree.c).
//
// # Transactions
//
// There is at most one running transaction. Begin joins it (starting one
// when there is none): a Handle holds the filesystem exclusively until End,
// so handles of one transaction run one after another and see each other's
// changes. Commit waits for the current handle to end, then commits; the
// next Begin starts the next transaction. A commit timer commits
// periodically.
//
// Nothing reaches the disk before commit except file data written with
// WriteData, and that only into space that is free in the last committed
// generation. Tree blocks changed in a transaction are new copies (COW) in
// such space too, kept in memory until commit. Space freed in a transaction
// stays pinned (not reused) until its commit is on disk. So a crash at any
// point leaves the previous generation intact, and the superblock write
// switches to the new one.
//
// # Commit
//
// Commit (see freeze) applies the queued reference changes to the
// extent tree and free space tree, writes the root items and block group
// items this produced, repeating until nothing more changes, checksums the
// dirty blocks and starts the next transaction; then, without the lock
// (writeCommit, the kernel's UNBLOCKED state), it writes every dirty
// block, flushes, writes the superblocks and flushes again. Meanwhile the
// next transaction reads the frozen blocks from memory (the reader holds
// them until written) and COWs them like any block of an older
// generation; the space the committing transaction freed stays pinned
// apart from what the next one frees, until the superblock is on disk.
// The next commit, a log sync and Close wait for the writes.
//
// Snapshot commits the running transaction before copying the source root,
// as the kernel's snapshot ioctl does, so that the blocks a snapshot shares
// are on disk and never changed in place again.
//
// # Invariants
//
// Built with -tags invariants (make invariants), every commit is followed by
// a run of internal/check on the device as written (read afresh, beneath a
// test's fault-injecting wrapper), and a problem panics with the checker's
// report. Without the tag the check is a constant false and compiles away.
// (internal/check's own tests cannot be built with the tag: they reach this
// package through mkfs.)
//
// # Space
//
// Tree blocks come from METADATA block groups (SYSTEM for the chunk tree),
// file data from DATA ones; a new chunk is allocated when they are full and
// the device has room. With mixed block groups both come from the same
// DATA|METADATA groups, and data is kept from what metadata needs
// (mixed.go). A global reserve of metadata space is kept for
// commits and deletions: Reserve refuses (ENOSPC) an operation that would
// eat into it, ReserveForDelete may use it. A tree block allocation that
// finds no metadata space at all aborts the transaction (the B-tree
// operation that asked is half done): handles that change trees should
// reserve first.
//
// # Locking
//
// Engine.mu is held by a Handle from Begin to End and by the locked part
// of Commit; a commit's writes hold only the log lock. Engine.Transid and
// Engine.Stats never wait; Engine.Commit, Engine.Close and Engine.Super wait for the
// current handle, so a goroutine must not call them while it holds one
// (Handle.Commit commits from inside a handle).
package txn
