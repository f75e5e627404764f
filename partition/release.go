package partition

// Release closes the log for good and waits for a cleaning in progress to
// stop, so that no file is created in the directory afterwards: the caller
// may then move it (the node quarantines a dropped partition rather than
// deleting it). A failed final flush is returned but the log is closed
// either way.
func (l *Log) Release() error {
	err := l.Close()
	l.cleanMu.Lock()
	l.cleanMu.Unlock()
	return err
}
