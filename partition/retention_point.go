package partition

import "time"

// RetentionPoint is the offset that retention by age and by size, as
// EnforceRetention applies RetentionAge and RetentionBytes, would move the
// log start to: the end of the last closed segment it would delete, or the
// log start if none. It deletes nothing. A replicated log, whose start may
// move only with its Raft log (node/replica/raftlog), runs with retention
// off and asks this with the topic's settings instead.
func (l *Log) RetentionPoint(age time.Duration, bytes int64) int64 {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	closedSegs := l.segs[:len(l.segs)-1]
	byAge := 0
	if age >= 0 {
		cutoff := l.cfg.Clock().Add(-age).UnixMilli()
		if age > time.Duration(1<<62) {
			cutoff = -1 << 62
		}
		for byAge < len(closedSegs) && closedSegs[byAge].st.maxTS < cutoff {
			byAge++
		}
	}
	bySize := 0
	if bytes >= 0 {
		excess := -bytes
		for _, s := range l.segs {
			excess += s.st.size
		}
		for bySize < len(closedSegs) && excess-closedSegs[bySize].st.size >= 0 {
			excess -= closedSegs[bySize].st.size
			bySize++
		}
	}
	l.mu.RLock()
	start := l.startLocked()
	l.mu.RUnlock()
	if n := max(byAge, bySize); n > 0 {
		return max(start, closedSegs[n-1].st.next)
	}
	return start
}
