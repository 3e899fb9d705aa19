package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFuzzBoundWithin: work inside the bounds runs and returns normally.
func TestFuzzBoundWithin(t *testing.T) {
	ran := false
	FuzzBounds{Time: 5 * time.Second, Mem: 64 << 20}.Run(t, []byte("ok"), func() {
		b := make([]byte, 8<<20)
		b[len(b)-1] = 1
		ran = true
	})
	if !ran {
		t.Fatal("fn did not run")
	}
}

// TestFuzzBoundExceeded runs a hanging input and a memory-hungry input in
// a child process: each must kill it with a message naming the input and
// what was exceeded, and the goroutine stacks.
func TestFuzzBoundExceeded(t *testing.T) {
	if mode := os.Getenv("GOBTRFS_FUZZBOUND_CHILD"); mode != "" {
		b := FuzzBounds{Time: 300 * time.Millisecond, Mem: 32 << 20}
		b.Run(t, []byte("input-"+mode), func() {
			switch mode {
			case "hang": // blocked: caught by wall time
				select {}
			case "spin": // busy: caught by CPU time
				for x := 0; ; x++ {
					spinSink = x
				}
			case "mem":
				var keep [][]byte
				for i := 0; ; i++ {
					keep = append(keep, make([]byte, 1<<20))
					keep[i][0] = 1
					if i%16 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}
		})
		return
	}
	for _, tc := range []struct{ mode, want string }{
		{"hang", "still running after"},
		{"spin", "still running after"},
		{"mem", "of heap in use above"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestFuzzBoundExceeded$", "-test.count=1")
			cmd.Env = append(os.Environ(), "GOBTRFS_FUZZBOUND_CHILD="+tc.mode)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("child exited 0; output:\n%s", out)
			}
			s := string(out)
			for _, want := range []string{"FUZZ BOUND EXCEEDED", tc.want, "input: " + hexOf("input-"+tc.mode), "goroutine "} {
				if !strings.Contains(s, want) {
					t.Errorf("output lacks %q:\n%.3000s", want, s)
				}
			}
		})
	}
}

var spinSink int

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
	}
	return b.String()
}
