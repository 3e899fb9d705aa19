// Package testutil runs btrfs-progs and the kernel for the tests of several
// packages: it checks images with btrfs check, makes images with
// mkfs.btrfs, attaches loop devices and mounts (undone in t.Cleanup), and
// skips tests that need root, loop devices or FUSE when they are missing.
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
