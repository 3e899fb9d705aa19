package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTerm is a terminal writer for tests: it records what is drawn.
type fakeTerm struct {
	mu  sync.Mutex
	buf bytes.Buffer
	tty bool
}

func (f *fakeTerm) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}
func (f *fakeTerm) IsTerminal() bool { return f.tty }
func (f *fakeTerm) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.String()
}

// waitFor polls until the output holds want (the bar draws from its own goroutine).
func waitFor(t *testing.T, f *fakeTerm, want string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if s := f.String(); strings.Contains(s, want) {
			return s
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no %q drawn; output %q", want, f.String())
	return ""
}

func TestBarDrawsOnTerminal(t *testing.T) {
	f := &fakeTerm{tty: true}
	b := New(f, Options{Label: "restore", TotalBytes: 4 << 20, TotalFiles: 4, Interval: time.Millisecond, Width: 200})
	if !b.Drawing() {
		t.Fatal("a bar on a terminal does not draw")
	}
	b.Add(2, 2<<20)
	b.Current("/dest/some/file")
	s := waitFor(t, f, "2/4 files")
	for _, want := range []string{"\r\033[K", "restore [", " 50%", "2.00MiB/4.00MiB", "/s", "ETA ", "/dest/some/file"} {
		if !strings.Contains(s, want) {
			t.Errorf("line %q lacks %q", s, want)
		}
	}
	b.Printf("note %d\n", 1)
	b.Stop()
	b.Stop()
	out := f.String()
	if i := strings.LastIndex(out, "note 1\n"); i < 4 || out[i-4:i] != "\r\033[K" {
		t.Errorf("Printf did not clear the bar first: %q", out[max(0, len(out)-80):])
	}
	if !strings.HasSuffix(out, "\r\033[K") && !strings.HasSuffix(out, "note 1\n") {
		t.Errorf("Stop left the bar on the screen: %q", out[max(0, len(out)-80):])
	}
	n := len(f.String())
	time.Sleep(10 * time.Millisecond)
	if len(f.String()) != n {
		t.Error("the bar still draws after Stop")
	}
}

func TestBarSilent(t *testing.T) {
	for _, tc := range []struct {
		name string
		tty  bool
		o    Options
	}{
		{"not a terminal", false, Options{}},
		{"quiet", true, Options{Quiet: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeTerm{tty: tc.tty}
			tc.o.Interval = time.Millisecond
			b := New(f, tc.o)
			b.Add(5, 1000)
			time.Sleep(20 * time.Millisecond)
			b.Stop()
			if b.Drawing() || f.String() != "" {
				t.Errorf("drew %q", f.String())
			}
			if b.Files() != 5 || b.Bytes() != 1000 {
				t.Errorf("counted %d files %d bytes, want 5 and 1000", b.Files(), b.Bytes())
			}
		})
	}
	var plain bytes.Buffer
	if IsTerminal(&plain) {
		t.Error("a bytes.Buffer is a terminal")
	}
}

func TestLine(t *testing.T) {
	b := &Bar{o: Options{TotalBytes: 100 << 20, Width: 100}}
	b.cur.Store(strings.Repeat("x", 200))
	b.Add(3, 25<<20)
	line := b.lineLocked(10 * time.Second)
	// a quarter in 10 s: 30 s left at 2.5 MiB/s
	for _, want := range []string{" 25%", "3 files", "25.00MiB/100.00MiB", "2.50MiB/s", "ETA 0:30", "...xxx"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	if len(line) > 99 {
		t.Errorf("line of %d columns on a 100-column terminal: %q", len(line), line)
	}
	unknown := &Bar{o: Options{Width: 80}}
	unknown.cur.Store("")
	unknown.Add(1, 512)
	if l := unknown.lineLocked(time.Second); strings.Contains(l, "ETA") || strings.Contains(l, "%") || !strings.Contains(l, "1 files 512B") {
		t.Errorf("line without totals: %q", l)
	}
	own := &Bar{o: Options{Width: 80, Counts: func() (int64, int64, string) { return 7, 2048, "/x" }}}
	if l := own.lineLocked(time.Second); !strings.Contains(l, "7 files 2.00KiB") || !strings.HasSuffix(l, " /x") {
		t.Errorf("line from Counts: %q", l)
	}
	if got := Clock(3723 * time.Second); got != "1:02:03" {
		t.Errorf("Clock = %q", got)
	}
}
