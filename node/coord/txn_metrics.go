package coord

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/txn"
)

// txnMetrics counts transactions' ends at this node's coordinator
// (FlushMetrics hands them on): spool_txn_committed, spool_txn_aborted
// (timed-out ones included) and spool_txn_timed_out, and the gauge
// spool_txn_open of ongoing transactions.
type txnMetrics struct {
	committed, aborted, timedOut atomic.Int64
	flushed                      [3]int64 // as of the last flush; the node's metrics loop's alone
}

func (m *txnMetrics) onEnd(state kmsg.TransactionState, timedOut bool) {
	switch {
	case timedOut:
		m.timedOut.Add(1)
	case state == txn.CompleteCommit:
		m.committed.Add(1)
	default:
		m.aborted.Add(1)
	}
}

// TimedOut is how many transactions this node's coordinator aborted for
// their timeout.
func (t *Txns) TimedOut() int64 { return t.metrics.timedOut.Load() }

// FlushMetrics emits what happened since the last flush, for the node's
// metrics loop (one caller at a time).
func (t *Txns) FlushMetrics(out Metrics) {
	m := &t.metrics
	now := [3]int64{m.committed.Load(), m.aborted.Load(), m.timedOut.Load()}
	for i, name := range []string{"committed", "aborted", "timed_out"} {
		if d := now[i] - m.flushed[i]; d > 0 {
			out.IncrCounter([]string{"txn", name}, float32(d))
		}
	}
	m.flushed = now
	if c, ok := t.host.Current(); ok {
		open := 0
		for _, st := range c.List() {
			if st.State == txn.Ongoing {
				open++
			}
		}
		out.SetGauge([]string{"txn", "open"}, float32(open))
	}
}
