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

// dropSgid clears the set-group-ID bit of n before a caller outside the
// file's group changes its data by fallocate, as the VFS does for kernel
// btrfs (file_modified: setattr_should_drop_sgid). The kernel's FUSE
// clears S_ISUID and a group-executable S_ISGID itself (fuse_setattr),
// but keeps S_ISGID without S_IXGRP (generic/683-685). Root keeps it
// (CAP_FSETID).
func (n *Node) dropSgid(ctx context.Context, r *rwState) syscall.Errno {
	c, ok := fuse.FromContext(ctx)
	if !ok || c.Uid == 0 {
		return 0
	}
	a, err := n.m.getattr(n.id)
	if err != nil {
		return n.m.errnoOf("fallocate", n.id, err)
	}
	if a.Mode&syscall.S_ISGID == 0 || a.Mode&syscall.S_IFMT != syscall.S_IFREG || inGroup(c, a.GID) {
		return 0
	}
	set := fsops.SetAttr{Valid: fsops.SetMode, Mode: a.Mode &^ (syscall.S_ISGID | syscall.S_ISUID) & 0o7777}
	return n.m.errnoOf("fallocate: clear S_ISGID", n.id, r.setattr(n.id, set, true))
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
