package item

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteSeedCorpus writes seedItems into testdata/fuzz/FuzzNAME/ in the
// format `go test -fuzz` reads. It runs only with GOBTRFS_WRITE_SEEDS=1.
func TestWriteSeedCorpus(t *testing.T) {
	if os.Getenv("GOBTRFS_WRITE_SEEDS") != "1" {
		t.Skip("set GOBTRFS_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	for name, seeds := range seedItems() {
		dir := filepath.Join("testdata", "fuzz", "Fuzz"+name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, s := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed%d", i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
