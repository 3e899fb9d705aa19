package print

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/testimg"
	"github.com/gobtrfs/gobtrfs/internal/testimg/hostile"
)

// TestDumpTreeSelfPointer: dump-tree of an image whose FS tree root points
// at itself (valid checksum and generation) ends, breadth first, depth
// first and from -b with follow, warning about the block.
func TestDumpTreeSelfPointer(t *testing.T) {
	b := hostile.Build(t)
	img, root := hostile.SelfPointer(t, b)
	for _, o := range []TreeOptions{{}, {DFS: true}, {Blocks: []ondisk.LogicalAddr{root}, Follow: true}} {
		t.Run(fmt.Sprintf("dfs=%v,blocks=%v", o.DFS, o.Blocks != nil), func(t *testing.T) {
			fs := testimg.OpenFS(t, img)
			var warnings []string
			o.Warn = func(s string) { warnings = append(warnings, s) }
			var out bytes.Buffer
			done := make(chan error, 1)
			go func() { done <- DumpTree(&out, fs, o) }()
			select {
			case err := <-done:
				t.Logf("error %v, %d bytes of output", err, out.Len())
			case <-time.After(30 * time.Second):
				t.Fatal("dump-tree did not end within 30s")
			}
			all := strings.Join(warnings, "\n")
			if !strings.Contains(all, fmt.Sprint(uint64(root))) || !strings.Contains(all, "level") {
				t.Errorf("no warning naming block %d and its level: %q", root, warnings)
			}
		})
	}
}
