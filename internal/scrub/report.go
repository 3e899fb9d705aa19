package scrub

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gobtrfs/gobtrfs/internal/ondisk"
	"github.com/gobtrfs/gobtrfs/internal/progress"
)

// String is one line per error, as the kernel logs scrub errors:
// "data csum error at logical 13631488 on devid 1 physical 22020096 (copy
// 1 of 2): /dir/file (subvol 5, inode 257, offset 0): corrected".
func (e Error) String() string {
	var b strings.Builder
	what := "data"
	switch {
	case e.Kind == SuperError:
		fmt.Fprintf(&b, "super error: superblock copy %d on devid %d at physical %d", e.Mirror-1, e.DevID, e.Physical)
	case e.Metadata:
		what = "metadata"
		kind := "leaf"
		if e.Level > 0 {
			kind = "node"
		}
		fmt.Fprintf(&b, "%s %s error: tree block at logical %d (%s, tree %s, level %d)", what, e.Kind, e.Logical, kind, ondisk.TreeName(e.Tree), e.Level)
	default:
		fmt.Fprintf(&b, "%s %s error at logical %d", what, e.Kind, e.Logical)
	}
	if e.Kind != SuperError && e.Mirror > 0 {
		fmt.Fprintf(&b, " on devid %d physical %d (copy %d of %d)", e.DevID, e.Physical, e.Mirror, e.Copies)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	for _, f := range e.Files {
		if f.Path != "" {
			fmt.Fprintf(&b, "; file %s (subvol %d, inode %d, offset %d)", f.Path, f.Subvol, f.Ino, f.Offset)
		} else {
			fmt.Fprintf(&b, "; file: subvol %d, inode %d, offset %d (path unknown: %v)", f.Subvol, f.Ino, f.Offset, f.Err)
		}
	}
	switch {
	case e.Corrected:
		b.WriteString(": corrected")
	case e.Uncorrectable:
		b.WriteString(": uncorrectable")
	default:
		b.WriteString(": repairable with --repair")
	}
	return b.String()
}

// Summary is the error summary line of btrfs scrub status: "no errors
// found" or "csum=2 verify=1".
func (r *Report) Summary() string {
	var parts []string
	add := func(name string, n uint64) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", name, n))
		}
	}
	add("read", r.ReadErrors)
	add("super", r.SuperErrors)
	add("verify", r.VerifyErrors)
	add("csum", r.CsumErrors)
	if len(parts) == 0 {
		return "no errors found"
	}
	return strings.Join(parts, " ")
}

// Status prints the report as btrfs scrub status does, for an image.
func (r *Report) Status(w io.Writer, image string) {
	total := r.DataBytes + r.TreeBytes
	fmt.Fprintf(w, "UUID:             %v\n", r.FSID)
	fmt.Fprintf(w, "Scrub started:    %s\n", r.Started.Format(time.ANSIC))
	fmt.Fprintf(w, "Status:           finished\n")
	fmt.Fprintf(w, "Duration:         %s\n", durationClock(r.Duration))
	fmt.Fprintf(w, "Total to scrub:   %s (data %s, metadata %s, every copy)\n", progress.Size(int64(total)),
		progress.Size(int64(r.DataBytes)), progress.Size(int64(r.TreeBytes)))
	fmt.Fprintf(w, "Rate:             %s\n", progress.Rate(int64(total), r.Duration))
	fmt.Fprintf(w, "Error summary:    %s\n", r.Summary())
	if r.NumErrors > 0 {
		fmt.Fprintf(w, "  Corrected:      %d\n", r.Corrected)
		fmt.Fprintf(w, "  Uncorrectable:  %d\n", r.Uncorrectable)
		fmt.Fprintf(w, "  Unverified:     %d\n", 0)
	}
}

// Raw prints the counters as btrfs scrub status -R does.
func (r *Report) Raw(w io.Writer) {
	for _, kv := range []struct {
		k string
		v uint64
	}{
		{"data_extents_scrubbed", r.DataExtents}, {"tree_extents_scrubbed", r.TreeExtents},
		{"data_bytes_scrubbed", r.DataBytes}, {"tree_bytes_scrubbed", r.TreeBytes},
		{"read_errors", r.ReadErrors}, {"csum_errors", r.CsumErrors}, {"verify_errors", r.VerifyErrors},
		{"no_csum", r.NoCsum}, {"csum_discards", 0}, {"super_errors", r.SuperErrors}, {"malloc_errors", 0},
		{"uncorrectable_errors", r.Uncorrectable}, {"unverified_errors", 0}, {"corrected_errors", r.Corrected},
	} {
		fmt.Fprintf(w, "\t%s: %d\n", kv.k, kv.v)
	}
	if r.Unverified > 0 {
		fmt.Fprintf(w, "\tbytes_on_missing_devices: %d\n", r.Unverified)
	}
}

// durationClock is btrfs scrub status's duration, H:MM:SS.
func durationClock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
