package blockgroup

// A commit that writes its blocks without the transaction lock (the
// kernel's UNBLOCKED state) lets the next transaction run meanwhile. The
// space the committing transaction freed must stay unused until its
// superblock is on disk, while space the next one frees must stay pinned
// until that one commits: FreezePinned sets the first apart, and
// UnpinCommitted frees exactly it. mirrors fs_info->pinned_extents being
// swapped per transaction (btrfs_finish_extent_commit of one transaction)

// FreezePinned hands the space pinned so far to the transaction being
// committed; what is freed from now on is pinned by the next one.
func (m *Manager) FreezePinned() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		for _, r := range g.pinned.Ranges() {
			g.committing.Add(r.Start, r.Len())
		}
		g.pinned.Clear()
	}
}

// UnpinCommitted makes the space frozen by FreezePinned allocatable: the
// transaction that freed it is on disk.
func (m *Manager) UnpinCommitted() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, g := range m.groups {
		for _, r := range g.committing.Ranges() {
			g.free.Add(r.Start, r.Len())
		}
		g.committing.Clear()
	}
}
