// Package progress draws a one-line progress bar for long jobs (put, mkfs
// --rootdir, restore, scrub) on a terminal: files, bytes, rate and, when
// the total is known, a bar and the time left. It draws nothing when its
// writer is not a terminal or when quiet, so scripts and logs see only the
// command's own output and its final summary line.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// Terminal is a writer that knows whether it is a terminal; a test passes a
// fake one. *os.File is asked through term.IsTerminal.
type Terminal interface {
	io.Writer
	IsTerminal() bool
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	switch t := w.(type) {
	case Terminal:
		return t.IsTerminal()
	case *os.File:
		return term.IsTerminal(int(t.Fd()))
	}
	return false
}

// Options configure a Bar.
type Options struct {
	// Label starts the line ("restore", "scrub").
	Label string
	// Quiet draws nothing (-q).
	Quiet bool
	// TotalBytes and TotalFiles, when known (> 0), give the bar, the
	// percentage and the time left.
	TotalBytes, TotalFiles int64
	// Interval between redraws (default 200 ms).
	Interval time.Duration
	// Width of the line in columns (default: the terminal's, else 80).
	Width int
	// Counts, when set, is read at every redraw instead of the bar's own
	// counters (for a job that keeps its own).
	Counts func() (files, bytes int64, current string)
}

// Bar counts work done and redraws a line on a terminal until Stop. Its
// counters are safe for concurrent use; with nothing to draw on, it only
// counts.
type Bar struct {
	w     io.Writer
	o     Options
	start time.Time
	on    bool

	files, bytes atomic.Int64
	cur          atomic.Value // string: what is being worked on

	mu     sync.Mutex // serializes drawing and Printf
	drawn  bool       // a line is on the screen
	done   chan struct{}
	wg     sync.WaitGroup
	stopMu sync.Once
}

// New returns a bar drawing on w; it starts drawing at once when w is a
// terminal and o.Quiet is not set.
func New(w io.Writer, o Options) *Bar {
	if o.Interval <= 0 {
		o.Interval = 200 * time.Millisecond
	}
	b := &Bar{w: w, o: o, start: time.Now(), on: !o.Quiet && IsTerminal(w)}
	b.cur.Store("")
	if b.o.Width <= 0 {
		b.o.Width = 80
		if f, ok := w.(*os.File); ok && b.on {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
				b.o.Width = cols
			}
		}
	}
	if b.on {
		b.done = make(chan struct{})
		b.wg.Add(1)
		go b.loop()
	}
	return b
}

// Drawing reports whether the bar draws (a terminal, not quiet).
func (b *Bar) Drawing() bool { return b.on }

// Add counts files and bytes done.
func (b *Bar) Add(files, bytes int64) {
	b.files.Add(files)
	b.bytes.Add(bytes)
}

// SetTotal sets the totals once they are known.
func (b *Bar) SetTotal(files, bytes int64) {
	b.mu.Lock()
	b.o.TotalFiles, b.o.TotalBytes = files, bytes
	b.mu.Unlock()
}

// Current names what is being worked on (a path), shown at the line's end.
func (b *Bar) Current(s string) { b.cur.Store(s) }

// Files and Bytes are the counts so far.
func (b *Bar) Files() int64 { return b.files.Load() }

// Bytes is the byte count so far.
func (b *Bar) Bytes() int64 { return b.bytes.Load() }

// Elapsed is the time since New.
func (b *Bar) Elapsed() time.Duration { return time.Since(b.start) }

// Printf prints a message line on w, clearing the bar first (it is
// redrawn at the next tick).
func (b *Bar) Printf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clearLocked()
	fmt.Fprintf(b.w, format, args...)
}

// Stop stops drawing and clears the line. It is safe to call twice.
func (b *Bar) Stop() {
	b.stopMu.Do(func() {
		if b.done != nil {
			close(b.done)
			b.wg.Wait()
		}
		b.mu.Lock()
		b.clearLocked()
		b.mu.Unlock()
	})
}

func (b *Bar) loop() {
	defer b.wg.Done()
	t := time.NewTicker(b.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-b.done:
			return
		case <-t.C:
			b.draw()
		}
	}
}

func (b *Bar) draw() {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(b.w, "\r\033[K%s", b.lineLocked(time.Since(b.start)))
	b.drawn = true
}

func (b *Bar) clearLocked() {
	if b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
		b.drawn = false
	}
}

// lineLocked is the progress line after elapsed time: "restore [=====>    ]
// 42% 12/30 files 1.2GiB/3.0GiB 85.3MiB/s ETA 0:21 /path".
func (b *Bar) lineLocked(elapsed time.Duration) string {
	files, bytes := b.files.Load(), b.bytes.Load()
	cur, _ := b.cur.Load().(string)
	if b.o.Counts != nil {
		files, bytes, cur = b.o.Counts()
	}
	secs := max(elapsed.Seconds(), 0.001)
	rate := float64(bytes) / secs
	var parts []string
	if b.o.Label != "" {
		parts = append(parts, b.o.Label)
	}
	frac := -1.0
	switch {
	case b.o.TotalBytes > 0:
		frac = float64(bytes) / float64(b.o.TotalBytes)
	case b.o.TotalFiles > 0:
		frac = float64(files) / float64(b.o.TotalFiles)
	}
	if frac >= 0 {
		frac = min(frac, 1)
		w := 20
		if b.o.Width < 100 {
			w = 12
		}
		parts = append(parts, bar(frac, w), fmt.Sprintf("%3.0f%%", frac*100))
	}
	switch {
	case b.o.TotalFiles > 0:
		parts = append(parts, fmt.Sprintf("%d/%d files", files, b.o.TotalFiles))
	case files > 0:
		parts = append(parts, fmt.Sprintf("%d files", files))
	}
	if b.o.TotalBytes > 0 {
		parts = append(parts, Size(bytes)+"/"+Size(b.o.TotalBytes))
	} else {
		parts = append(parts, Size(bytes))
	}
	parts = append(parts, Size(int64(rate))+"/s")
	if frac > 0 && frac < 1 {
		left := time.Duration(float64(elapsed) * (1 - frac) / frac)
		parts = append(parts, "ETA "+Clock(left))
	}
	line := strings.Join(parts, " ")
	if cur != "" {
		room := b.o.Width - 1 - len(line) - 1
		if room >= 8 {
			if len(cur) > room {
				cur = "..." + cur[len(cur)-(room-3):]
			}
			line += " " + cur
		}
	}
	if len(line) > b.o.Width-1 {
		line = line[:b.o.Width-1]
	}
	return line
}

func bar(frac float64, width int) string {
	n := int(frac * float64(width))
	s := strings.Repeat("=", n)
	if n < width {
		s += ">" + strings.Repeat(" ", width-n-1)
	}
	return "[" + s + "]"
}

// Size formats a byte count as btrfs-progs' human sizes do: "1.50GiB".
func Size(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%dB", n)
	}
	return fmt.Sprintf("%.2f%s", f, units[i])
}

// Clock formats a duration as H:MM:SS or M:SS.
func Clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// Rate formats bytes over elapsed as "12.30MiB/s".
func Rate(bytes int64, elapsed time.Duration) string {
	return Size(int64(float64(bytes)/max(elapsed.Seconds(), 0.001))) + "/s"
}
