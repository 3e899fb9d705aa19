package treelog

// SetMaxTargets changes maxTargets for a test and returns the old value.
func SetMaxTargets(n int) int {
	old := maxTargets
	maxTargets = n
	return old
}
