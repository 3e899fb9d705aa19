package fusefs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/gobtrfs/gobtrfs/internal/fsops"
)

// dropSgid drops the set-ID bits of n before an unprivileged caller
// changes its data by fallocate or copy_file_range, as the VFS does for
// kernel btrfs (file_modified: should_remove_suid and
// setattr_should_drop_sgid): S_ISUID, S_ISGID with S_IXGRP, and S_ISGID
// without it when the caller is outside the file's group. The kernel's
// FUSE sends no kill flag with these requests, and with
// FUSE_HANDLE_KILLPRIV_V2 (killpriv.go) it leaves them all to the daemon
// (generic/683-687). Root keeps them (CAP_FSETID).
func (n *Node) dropSgid(ctx context.Context, r *rwState) syscall.Errno {
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Uid == 0 {
		return 0
	}
	a, err := n.m.getattr(n.id)
	if err != nil {
		return n.m.errnoOf("fallocate", n.id, err)
	}
	if a.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return 0
	}
	m := killedMode(a.Mode)
	if m&syscall.S_ISGID != 0 && !inGroup(c, a.GID) {
		m &^= syscall.S_ISGID
	}
	if m == a.Mode {
		return 0
	}
	set := fsops.SetAttr{Valid: fsops.SetMode, Mode: m & 0o7777}
	return n.m.errnoOf("drop set-ID bits of", n.id, r.setattr(n.id, set, true))
}

// inGroup reports whether the caller is in group gid: its gid, or one of
// its supplementary groups (which FUSE does not send: read from
// /proc/PID/status; unknown counts as not in the group).
func inGroup(c *fuse.Caller, gid uint32) bool {
	if c.Gid == gid {
		return true
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.Pid))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		groups, ok := strings.CutPrefix(s.Text(), "Groups:")
		if !ok {
			continue
		}
		for _, g := range strings.Fields(groups) {
			if v, err := strconv.ParseUint(g, 10, 32); err == nil && uint32(v) == gid {
				return true
			}
		}
		return false
	}
	return false
}
