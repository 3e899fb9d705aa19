package check

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// TestHostileSelfPointer: a key pointer of the FS tree's root points at the
// root node itself (valid checksum and generation). The check ends promptly
// and reports the block in the FS tree.
func TestHostileSelfPointer(t *testing.T) {
	b := hostile.Build(t)
	img, root := hostile.SelfPointer(t, b)
	done := make(chan *Report, 1)
	go func() { done <- ourCheck(t, img, Options{}) }()
	var rep *Report
	select {
	case rep = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("check did not end within 60s")
	}
	if rep.OK() {
		t.Fatal("check found an image with a self-pointing node clean")
	}
	out := rep.String()
	t.Logf("%s", describe(rep))
	if !strings.Contains(out, fmt.Sprint(uint64(root))) || !strings.Contains(out, "FS_TREE") {
		t.Errorf("report does not name block %d of FS_TREE", root)
	}
}
