package admin

// Delta hands a total the node counts with an atomic where it happens
// (metrics.go says why) to go-metrics: each Flush emits, under name, what
// the total grew since the last. The node flushes every FlushInterval
// while it runs, and once more at shutdown after requests have drained;
// only one of these runs at a time, and they alone advance the mark.
type Delta struct{ last int64 }

// Flush emits what now adds to the last flushed total, as counter name.
func (d *Delta) Flush(m *Metrics, name []string, now int64) {
	if x := now - d.last; x > 0 {
		m.IncrCounter(name, float32(x))
	}
	d.last = now
}
