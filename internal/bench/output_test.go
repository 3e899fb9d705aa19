package bench

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestOutputFlags: -json and -plot FILE are taken from anywhere in the
// arguments; the rest is left for the benchmark's own flags.
func TestOutputFlags(t *testing.T) {
	var o output
	rest, err := o.parse([]string{"-json", "meta", "-reps", "1", "-plot", "x.png"})
	if err != nil {
		t.Fatal(err)
	}
	if !o.json || o.plot != "x.png" || !reflect.DeepEqual(rest, []string{"meta", "-reps", "1"}) {
		t.Errorf("parsed %+v, rest %q", o, rest)
	}
	if _, err := (&output{}).parse([]string{"meta", "-plot"}); err == nil {
		t.Error("-plot without a file: no error")
	}
}

// TestPlotTables draws the ratio columns of two tables (cells that are no
// number are left out) into a PNG that decodes.
func TestPlotTables(t *testing.T) {
	ts := []*table{
		{title: "a", head: []string{"target", "time", "vs loopback"}, rows: [][]string{{"ours", "1.0 ms", "0.93"}, {"loopback", "2.0 ms", "1.00"}, {"none", "-", "-"}}},
		{title: "b", head: []string{"target", "p99", "p99 vs no commits"}, rows: [][]string{{"ours", "5 µs", "1.20"}}},
		{title: "no ratios", head: []string{"target", "extents"}, rows: [][]string{{"ours", "10"}}},
	}
	path := filepath.Join(t.TempDir(), "p.png")
	if err := plotTables(path, "test", ts); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
		t.Errorf("image is %v", r)
	}
	if err := plotTables(path, "test", ts[2:]); err == nil {
		t.Error("no table with a ratio column: no error")
	}
}
