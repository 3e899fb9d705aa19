package testutil

import (
	"fmt"
	"sort"
)

// DiffMaps lists, sorted, how got differs from want: keys whose values
// differ (a key missing from got counts as an empty value) and keys only
// got has.
func DiffMaps(want, got map[string]string) []string {
	var diffs []string
	for k, v := range want {
		if got[k] != v {
			diffs = append(diffs, fmt.Sprintf("%s:\n    got  %q\n    want %q", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: unexpected %q", k, v))
		}
	}
	sort.Strings(diffs)
	return diffs
}
