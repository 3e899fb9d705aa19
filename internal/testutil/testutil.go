// Package testutil holds what tests of several packages need to run
// btrfs-progs and the kernel: checking images with btrfs check, making
// images with mkfs.btrfs, loop devices and mounts (undone in t.Cleanup),
// and the skips for tests that need root, loop devices or FUSE.
package testutil

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// Run runs a command and returns its standard output; the test fails with
// both outputs when the command does.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}
