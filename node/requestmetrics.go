package node

import (
	"context"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics of the request path are counted with atomics where they happen
// and reach go-metrics from one loop (flushMetrics), because go-metrics'
// per-call cost (a label key built and looked up in a sync.Map per call, a
// locked quantile stream per latency sample) was about a tenth of the
// node's CPU per produce request with one request in flight.
//
// Request latency is the exception: go-metrics has no histogram, only
// samples that its Prometheus sink turns into a summary, and a sample per
// request is what cost most. It is a Prometheus histogram per API instead,
// registered on the same registry /metrics serves, whose observations are
// a few atomic adds; its _count is the request count per API.

// metricsFlushInterval is how often counted request-path metrics reach
// go-metrics.
const metricsFlushInterval = time.Second

// requestLatencyBuckets spans a loopback round trip's handling (tens of
// microseconds) to a long poll (Kafka's default fetch.max.wait is 500 ms;
// a JoinGroup may wait for the rebalance timeout).
var requestLatencyBuckets = prometheus.ExponentialBuckets(25e-6, 2, 20) // 25 µs .. ~13 s

// requestMetrics holds one latency histogram per API key of the table.
type requestMetrics struct {
	byKey map[int16]prometheus.Observer
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spool_kafka_request_seconds",
		Help:    "Time from a decoded Kafka request to its response being ready, per API; _count counts requests.",
		Buckets: requestLatencyBuckets,
	}, []string{"api"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	m := &requestMetrics{byKey: make(map[int16]prometheus.Observer, len(apis))}
	for key := range apis {
		// Resolved once, so that observing costs no label lookup.
		m.byKey[key] = vec.WithLabelValues(kmsg.NameForKey(key))
	}
	return m, nil
}

// observe records one handled request of API key since start.
func (m *requestMetrics) observe(key int16, start time.Time) {
	if o, ok := m.byKey[key]; ok {
		o.Observe(time.Since(start).Seconds())
	}
}

// metricsLoop hands the counted metrics to go-metrics until the node closes.
func (n *Node) metricsLoop(ctx context.Context) {
	t := time.NewTicker(metricsFlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return // Shutdown flushes once requests have drained
		case <-t.C:
		}
		n.flushMetrics()
	}
}

// flushMetrics emits what was counted since the last flush. Only this loop
// advances the flushed marks.
func (n *Node) flushMetrics() {
	out := n.stats.bytesOut.Load()
	if d := out - n.flushedBytesOut; d > 0 {
		n.metrics.IncrCounter([]string{"fetch", "bytes"}, float32(d))
	}
	n.flushedBytesOut = out
	for _, p := range n.localPartitions() {
		bytes, records := p.producedBytes.Load(), p.producedRecords.Load()
		db, dr := bytes-p.flushedBytes, records-p.flushedRecords
		if db == 0 && dr == 0 {
			continue
		}
		p.flushedBytes, p.flushedRecords = bytes, records
		labels := []metrics.Label{{Name: "topic", Value: p.topic}}
		n.metrics.IncrCounterWithLabels([]string{"produce", "bytes"}, float32(db), labels)
		n.metrics.IncrCounterWithLabels([]string{"produce", "records"}, float32(dr), labels)
	}
}
