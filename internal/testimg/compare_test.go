package testimg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gobtrfs/gobtrfs/internal/testutil"
)

// TestCompareFindsDifferences: Compare must notice each kind of change.
func TestCompareFindsDifferences(t *testing.T) {
	a := t.TempDir()
	os.WriteFile(filepath.Join(a, "f"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(a, "g"), []byte("x"), 0o644)
	os.Link(filepath.Join(a, "g"), filepath.Join(a, "g2"))
	os.Symlink("f", filepath.Join(a, "l"))
	unix.Setxattr(filepath.Join(a, "f"), "user.k", []byte("v"), 0)
	copyTree := func() string {
		b := filepath.Join(t.TempDir(), "b")
		testutil.Run(t, "cp", "-a", a, b)
		return b
	}
	if d := Compare(a, copyTree(), CompareOptions{}); len(d) > 0 {
		t.Fatalf("identical trees differ: %v", d)
	}
	cases := map[string]func(b string){
		"content": func(b string) { os.WriteFile(filepath.Join(b, "f"), []byte("hellO"), 0o644) },
		"mode":    func(b string) { os.Chmod(filepath.Join(b, "f"), 0o600) },
		"mtime": func(b string) {
			fi, _ := os.Stat(filepath.Join(b, "f"))
			os.Chtimes(filepath.Join(b, "f"), fi.ModTime(), fi.ModTime().Add(time.Nanosecond))
		},
		"xattr":   func(b string) { unix.Setxattr(filepath.Join(b, "f"), "user.k", []byte("w"), 0) },
		"symlink": func(b string) { os.Remove(filepath.Join(b, "l")); os.Symlink("g", filepath.Join(b, "l")) },
		"missing": func(b string) { os.Remove(filepath.Join(b, "g2")) },
		"extra":   func(b string) { os.WriteFile(filepath.Join(b, "new"), nil, 0o644) },
		"hardlink": func(b string) {
			os.Remove(filepath.Join(b, "g2"))
			os.WriteFile(filepath.Join(b, "g2"), []byte("x"), 0o644)
		},
	}
	for name, mutate := range cases {
		b := copyTree()
		mutate(b)
		d := Compare(a, b, CompareOptions{})
		if len(d) == 0 {
			t.Errorf("%s: change not detected", name)
		} else {
			t.Logf("%s: %s", name, strings.Join(d, "; "))
		}
	}
}
