package partition

// SegmentInfo describes one closed segment for a copier outside the
// package (tiered storage, node/tier): its offsets, size, newest timestamp
// and the paths of its files. The files may be deleted (retention) or
// replaced (a cleaning) at any time after the call; a copier opens them,
// and a file already open stays readable.
type SegmentInfo struct {
	Base, Next    int64 // offsets: the segment holds [Base, Next)
	Size          int64 // bytes of whole batches
	MaxTimestamp  int64 // newest batch maxTimestamp, -1 if none
	LogPath       string
	IndexPath     string
	TimeIndexPath string
}

// ClosedSegments lists the closed segments (all but the active one),
// oldest first. A sealed segment's index files may still lack its newest
// entries (a roll writes them in the background): indexes are hints, a
// reader of a copy finds batches by their headers from an indexed position.
func (l *Log) ClosedSegments() []SegmentInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]SegmentInfo, 0, len(l.segs)-1)
	for _, s := range l.segs[:len(l.segs)-1] {
		out = append(out, SegmentInfo{
			Base: s.base, Next: s.st.next, Size: s.st.size, MaxTimestamp: s.st.maxTS,
			LogPath:       segmentName(l.dir, s.base, logSuffix),
			IndexPath:     segmentName(l.dir, s.base, offsetSuffix),
			TimeIndexPath: segmentName(l.dir, s.base, timeIndexSuffix),
		})
	}
	return out
}

// LeaderEpochCheckpointPath is the path of the log's leader-epoch
// checkpoint file (written atomically: a copy opened is always whole).
func (l *Log) LeaderEpochCheckpointPath() string { return l.dir + "/" + leaderEpochFile }
