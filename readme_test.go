package gobtrfs_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMESnippets: every line of the README's Go snippets is cut from
// example_test.go, whose Example functions go test compiles and runs, so
// the README shows code that compiles and works. (A line matches when its
// code, without a trailing // comment, is part of a line there.)
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(examples), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	found := func(code string) bool {
		for _, l := range lines {
			if strings.Contains(l, code) {
				return true
			}
		}
		return false
	}
	in, snippets := false, 0
	for i, l := range strings.Split(string(readme), "\n") {
		switch {
		case strings.HasPrefix(l, "```go"):
			in = true
			snippets++
			continue
		case strings.HasPrefix(l, "```"):
			in = false
			continue
		case !in:
			continue
		}
		code := strings.TrimSpace(l)
		if c, _, ok := strings.Cut(code, " //"); ok {
			code = strings.TrimSpace(c)
		}
		if code == "" || strings.HasPrefix(code, "//") {
			continue
		}
		if !found(code) {
			t.Errorf("README.md:%d: %q is in no Example of example_test.go", i+1, code)
		}
	}
	if snippets == 0 {
		t.Errorf("README.md has no Go snippet")
	}
}
