package txn

import "time"

// DefaultCommitInterval is the kernel's default commit= mount option.
const DefaultCommitInterval = 30 * time.Second

// StartCommitTimer commits the running transaction every d (the default
// interval when d <= 0) until StopCommitTimer or Close. Errors abort the
// filesystem and are returned by later calls. mirrors transaction_kthread
func (f *Engine) StartCommitTimer(d time.Duration) {
	if d <= 0 {
		d = DefaultCommitInterval
	}
	f.StopCommitTimer()
	stop, done := make(chan struct{}), make(chan struct{})
	f.timerMu.Lock()
	f.timerStop, f.timerDone = stop, done
	f.timerMu.Unlock()
	go func() {
		defer close(done)
		tk := time.NewTicker(d)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if err := f.Commit(); err != nil {
					return
				}
			}
		}
	}()
}

// StopCommitTimer stops the commit timer and waits for a commit it started.
func (f *Engine) StopCommitTimer() {
	f.timerMu.Lock()
	stop, done := f.timerStop, f.timerDone
	f.timerStop, f.timerDone = nil, nil
	f.timerMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
