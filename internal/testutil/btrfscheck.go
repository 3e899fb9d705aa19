package testutil

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

var (
	// problemWord matches the words of btrfs check lines that report a
	// problem ("ERROR: ...", "errors found", "ref mismatch", "wanted",
	// "missing", "bad key", "wrong", "corrupt", "invalid", "failed").
	problemWord = regexp.MustCompile(`(?i)\b(errors?|mismatch\w*|wanted|missing|bad|wrong|corrupt\w*|invalid|failed)\b`)
	// uuid is blanked before matching: a random UUID may spell a word.
	uuid = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
)

// ProblemLines returns the lines of btrfs check output that report a
// problem. The image path (which holds the test's name), UUIDs and the
// summary "no error found" are ignored.
func ProblemLines(out, path string) []string {
	var bad []string
	for _, line := range strings.Split(out, "\n") {
		l := line
		if path != "" {
			l = strings.ReplaceAll(l, path, "IMAGE")
		}
		l = strings.ReplaceAll(l, "no error found", "")
		if problemWord.MatchString(uuid.ReplaceAllString(l, "UUID")) {
			bad = append(bad, line)
		}
	}
	return bad
}

// CheckImage runs `btrfs check --readonly [extraArgs] path` and fails the
// test on a non-zero exit, on any line that reports a problem
// (ProblemLines), or when the summary does not say "no error found". It
// returns the output. Without btrfs-progs the test is skipped.
func CheckImage(t testing.TB, path string, extraArgs ...string) string {
	t.Helper()
	if _, err := exec.LookPath("btrfs"); err != nil {
		t.Skipf("btrfs not installed (btrfs-progs): cannot check %s", path)
	}
	args := append(append([]string{"check", "--readonly"}, extraArgs...), path)
	out, err := exec.Command("btrfs", args...).CombinedOutput()
	bad := ProblemLines(string(out), path)
	if err != nil || len(bad) > 0 || !strings.Contains(string(out), "no error found") {
		t.Fatalf("btrfs %s: %v\nproblem lines:\n%s\nfull output:\n%s", strings.Join(args, " "), err,
			strings.Join(bad, "\n"), out)
	}
	return string(out)
}
