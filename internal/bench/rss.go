package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// The mounts of these benchmarks run inside the bench process, so its peak
// resident set (VmHWM) is the mount's, plus the bench's own small share.
// resetPeakRSS starts a new peak (writing 5 to clear_refs resets VmHWM);
// peakRSS reads it.

func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is the process's peak resident set in bytes since the last
// reset (0 when /proc does not say).
func peakRSS() int64 { return statusKB("VmHWM:") }

// currentRSS is the process's resident set now.
func currentRSS() int64 { return statusKB("VmRSS:") }

// statusKB reads a "kB" line of /proc/self/status, in bytes.
func statusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

func mib(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }
