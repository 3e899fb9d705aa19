package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// runHostile runs `gobtrfs args...` in its own process, killed after a
// minute: a command that loops on a crafted image fails the test instead
// of hanging it.
func runHostile(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := gobtrfsCmd(ctx, args...).CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("gobtrfs %s did not end within a minute; output:\n%.2000s", strings.Join(args, " "), out)
	}
	return string(out), err
}

// TestHostileImagesCLI: ls -R and check of crafted images (a tree node
// pointing at itself, a directory entry pointing at its own directory or at
// the root) end promptly with an error that names the block or the entry.
func TestHostileImagesCLI(t *testing.T) {
	b := hostile.Build(t)
	self, root := hostile.SelfPointer(t, b)
	block := fmt.Sprint(uint64(root))
	dir := fmt.Sprintf("dir %d", b.Ino["a/b"])
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"ls self pointer", []string{"ls", "-R", self}, []string{block, "FS_TREE", "level"}},
		{"check self pointer", []string{"check", self}, []string{block, "FS_TREE"}},
		{"ls dir loop", []string{"ls", "-R", hostile.DirLoop(t, b, false)}, []string{dir, `"c"`, "names its own directory"}},
		{"ls dir loop to root", []string{"ls", "-R", hostile.DirLoop(t, b, true)}, []string{dir, `"c"`, "root directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runHostile(t, c.args...)
			if err == nil {
				t.Errorf("gobtrfs %s exited 0", strings.Join(c.args, " "))
			}
			if len(out) > 1<<20 {
				t.Errorf("%d bytes of output", len(out))
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not name %q:\n%.3000s", w, out)
				}
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			t.Logf("%d lines; last: %s", len(lines), lines[len(lines)-1])
		})
	}
}
