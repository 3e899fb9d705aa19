package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// ttyBuffer is a stderr that says it is a terminal.
type ttyBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *ttyBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.Write(p)
}
func (t *ttyBuffer) IsTerminal() bool { return true }
func (t *ttyBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// TestPutSummaryAndQuiet: put ends with a summary line; no progress line
// is drawn when stderr is not a terminal, nor with -q on one.
func TestPutSummaryAndQuiet(t *testing.T) {
	src := t.TempDir()
	for i := 0; i < 5; i++ {
		os.WriteFile(filepath.Join(src, "f"+string(rune('0'+i))), bytes.Repeat([]byte{byte(i)}, 100000), 0o644)
	}
	img := filepath.Join(t.TempDir(), "p.img")
	if _, errs, rc := clitoolsRun("mkfs", "-q", "-b", "128M", img); rc != 0 {
		t.Fatal(errs)
	}
	var plain bytes.Buffer
	if err := runCommand(newPutCmd(), []string{img, src, "/a"}, &plain, &plain); err != nil {
		t.Fatal(err)
	}
	if s := plain.String(); strings.Contains(s, "\r") || !regexp.MustCompile(`^put: copied 6 entries, 488\.28KiB of data in \d+:\d\d \(.*/s\)\n$`).MatchString(s) {
		t.Errorf("put to a non-terminal printed %q, want only the summary line", s)
	}
	tty := &ttyBuffer{}
	if err := runCommand(newPutCmd(), []string{"-q", img, src, "/b"}, tty, tty); err != nil {
		t.Fatal(err)
	}
	if s := tty.String(); strings.Contains(s, "\r") || !strings.HasPrefix(s, "put: copied 6 entries") {
		t.Errorf("put -q on a terminal printed %q", s)
	}
}
