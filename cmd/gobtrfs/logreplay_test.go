package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestCatReplaysLog: cat (like ls and restore) shows what a pending log tree
// holds, as Linux would after its replay; --nologreplay shows the committed
// state and warns.
func TestCatReplaysLog(t *testing.T) {
	testutil.NeedRootLoop(t)
	testutil.NeedProgs(t)
	if _, err := exec.LookPath("xfs_io"); err != nil {
		t.Skip("xfs_io not installed (xfsprogs)")
	}
	dir := t.TempDir()
	img, crash := filepath.Join(dir, "img"), filepath.Join(dir, "crash")
	testutil.Mkfs(t, img, 256<<20)
	mnt := testutil.LoopMount(t, img, "commit=300")
	run := func(script string) {
		cmd := exec.Command("sh", "-ec", script)
		cmd.Dir = mnt
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	run("echo before > a")
	testutil.Run(t, "btrfs", "filesystem", "sync", mnt)
	run("echo after > a && xfs_io -c fsync a")
	testutil.Run(t, "cp", "--sparse=always", img, crash)
	testutil.Unmount(t, mnt)

	for _, c := range []struct {
		args       []string
		want, warn string
	}{
		{[]string{"cat", crash, "/a"}, "after\n", ""},
		{[]string{"cat", "--nologreplay", crash, "/a"}, "before\n", "not replayed"},
	} {
		var stdout, stderr strings.Builder
		cmd := gobtrfsCmd(context.Background(), c.args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("gobtrfs %s: %v\n%s", strings.Join(c.args, " "), err, stderr.String())
		}
		if stdout.String() != c.want {
			t.Errorf("gobtrfs %s: %q, want %q", strings.Join(c.args, " "), stdout.String(), c.want)
		}
		if c.warn == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), c.warn) {
			t.Errorf("gobtrfs %s: stderr %q, want a warning with %q", strings.Join(c.args, " "), stderr.String(), c.warn)
		}
	}
}
