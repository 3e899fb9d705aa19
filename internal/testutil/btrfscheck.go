package testutil

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The one set of rules by which tests read btrfs check's output: the union
// of what the packages' own wrappers used to look for.
var (
	// problemWord matches the words of btrfs check lines that report a
	// problem ("ERROR: ...", "errors found", "ref mismatch", "wanted",
	// "missing", "bad key", "wrong", "corrupt", "invalid", "csum failed",
	// "incorrect", "unresolved", "backref not found", "could not", "counts
	// ... are different").
	problemWord = regexp.MustCompile(`(?i)\b(errors?|mismatch\w*|wanted|missing|bad|wrong|corrupt\w*|invalid|fail\w*|incorrect\w*|unresolved|not found|could not|couldn't|cannot|can't|unable|are different|no valid)\b`)
	// uuid is blanked before matching: a random UUID may spell a word.
	uuid = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
)

// ProblemLines returns the lines of btrfs check output that report a
// problem. The image path (which holds the test's name), UUIDs and the
// summaries "no error found" / "found 0 errors" are ignored.
func ProblemLines(out, path string) []string {
	var bad []string
	// qgroup numbers that differ while a rescan is pending are expected,
	// and btrfs check says so
	qgroupsStale := strings.Contains(out, "a difference in qgroup accounting is expected")
	for _, line := range strings.Split(out, "\n") {
		if qgroupsStale && strings.HasPrefix(line, "Counts for qgroup id:") {
			continue
		}
		l := line
		if path != "" {
			l = strings.ReplaceAll(l, path, "IMAGE")
		}
		l = strings.ReplaceAll(l, "no error found", "")
		l = strings.ReplaceAll(l, "found 0 errors", "")
		if problemWord.MatchString(uuid.ReplaceAllString(l, "UUID")) {
			bad = append(bad, line)
		}
	}
	return bad
}

// ProgsResult is what `btrfs check --readonly` said of an image.
type ProgsResult struct {
	Args     []string // the arguments after "btrfs"
	Output   string   // standard output and error
	Err      error    // the exit status (nil for 0)
	Problems []string // ProblemLines of Output
}

// Clean reports whether btrfs check found nothing: exit status 0, no
// problem line, and the summary "no error found".
func (r ProgsResult) Clean() bool {
	return r.Err == nil && len(r.Problems) == 0 && strings.Contains(r.Output, "no error found")
}

// String is a report for a failing test.
func (r ProgsResult) String() string {
	return fmt.Sprintf("btrfs %s: exit %v\nproblem lines:\n%s\nfull output:\n%s", strings.Join(r.Args, " "), r.Err,
		strings.Join(r.Problems, "\n"), r.Output)
}

// HaveProgs reports whether the btrfs command (btrfs-progs) is installed.
func HaveProgs() bool {
	_, err := exec.LookPath("btrfs")
	return err == nil
}

// ProgsMissing is what a check logs when btrfs-progs is not installed.
const ProgsMissing = "btrfs-progs not installed: btrfs check skipped"

// ProgsCheck runs `btrfs check --readonly [extraArgs] path`; ran is false
// when btrfs-progs is not installed.
func ProgsCheck(path string, extraArgs ...string) (r ProgsResult, ran bool) {
	if !HaveProgs() {
		return ProgsResult{}, false
	}
	r.Args = append(append([]string{"check", "--readonly"}, extraArgs...), path)
	out, err := exec.Command("btrfs", r.Args...).CombinedOutput()
	r.Output, r.Err, r.Problems = string(out), err, ProblemLines(string(out), path)
	return r, true
}

// CheckImage runs `btrfs check --readonly [extraArgs] path` and fails the
// test unless it is Clean. It returns the output. Without btrfs-progs it
// logs ProgsMissing and returns "" (the test goes on: a missing tool never
// turns a finished test into a skip).
func CheckImage(t testing.TB, path string, extraArgs ...string) string {
	t.Helper()
	r, ran := ProgsCheck(path, extraArgs...)
	if !ran {
		t.Logf("%s (%s)", ProgsMissing, path)
		return ""
	}
	if !r.Clean() {
		t.Fatal(r.String())
	}
	return r.Output
}
