package share

// MetricNames name the counters of Stats that FlushMetrics emits, in
// counts' order: spool_share_records_acquired,
// spool_share_records_acknowledged, spool_share_records_released,
// spool_share_records_rejected, spool_share_records_redelivered,
// spool_share_records_archived and spool_share_records_lock_expiries.
var MetricNames = [7]string{"acquired", "acknowledged", "released", "rejected", "redelivered", "archived", "lock_expiries"}

func counts(st *Stats) [7]int64 {
	return [7]int64{st.Acquired.Load(), st.Acknowledged.Load(), st.Released.Load(), st.Rejected.Load(),
		st.Redelivered.Load(), st.Archived.Load(), st.LockExpiries.Load()}
}

// Counters takes the counters FlushMetrics emits.
type Counters interface {
	IncrCounter(key []string, val float32)
}

// FlushMetrics emits what share partitions on this node did since the
// last flush: the counters MetricNames names. One caller at a time (the
// node's metrics loop).
func (n *Node) FlushMetrics(out Counters) {
	_, parts := n.Get()
	now := counts(&parts.Stats)
	for i, v := range now {
		if d := v - n.flushed[i]; d > 0 {
			out.IncrCounter([]string{"share", "records", MetricNames[i]}, float32(d))
		}
	}
	n.flushed = now
}
