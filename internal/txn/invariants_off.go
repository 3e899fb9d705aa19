//go:build !invariants

package txn

// invariants is false in normal builds: the check after every commit
// (invariants_on.go, -tags invariants) compiles away.
const invariants = false

func (f *Engine) checkCommitted(gen uint64) {}
