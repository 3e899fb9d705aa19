package bench

import (
	"testing"
	"time"
)

// TestParseBonnie reads a CSV line bonnie++ 2.00a printed for kernel btrfs.
func TestParseBonnie(t *testing.T) {
	line := "1.98,2.00a,vm,1,1796147800,,,,,,,,,,,,,,,,,4,,,,,1217,49,+++++,+++,2343,50,1460,53,+++++,+++,845,78,,,,,,,6509us,214us,8228us,4880us,47us,6633us\n"
	b, err := parseBonnie("Version 2.00a\n" + line)
	if err != nil {
		t.Fatal(err)
	}
	if b.rate != [4]float64{1217, 2343, 1460, 845} {
		t.Errorf("rates %v", b.rate)
	}
	want := [4]time.Duration{6509 * time.Microsecond, 8228 * time.Microsecond, 4880 * time.Microsecond, 6633 * time.Microsecond}
	if b.lat != want {
		t.Errorf("latencies %v, want %v", b.lat, want)
	}
	if _, err := parseBonnie("1.98,short\n"); err == nil {
		t.Error("a short line parsed")
	}
}
