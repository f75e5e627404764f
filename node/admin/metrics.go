package admin

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-metrics"
	promsink "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metrics of the request path are counted with atomics where they happen
// and reach go-metrics from one loop (the node's flushMetrics), because go-metrics'
// per-call cost (a label key built and looked up in a sync.Map per call, a
// locked quantile stream per latency sample) was about a tenth of the
// node's CPU per produce request with one request in flight.
//
// Request latency is the exception: go-metrics has no histogram, only
// samples that its Prometheus sink turns into a summary, and a sample per
// request is what cost most. It is a Prometheus histogram per API instead,
// registered on the same registry /metrics serves, whose observations are
// a few atomic adds; its _count is the request count per API.

// FlushInterval is how often the node hands its counted request-path
// metrics to go-metrics.
const FlushInterval = time.Second

// requestLatencyBuckets spans a loopback round trip's handling (tens of
// microseconds) to a long poll (Kafka's default fetch.max.wait is 500 ms;
// a JoinGroup may wait for the rebalance timeout).
var requestLatencyBuckets = prometheus.ExponentialBuckets(25e-6, 2, 20) // 25 µs .. ~13 s

// Metrics are the node's metrics: go-metrics (the node's own, Serf's and
// memberlist's) into a Prometheus registry, which /metrics serves beside
// the request latency histograms.
type Metrics struct {
	*metrics.Metrics
	Registry *prometheus.Registry
	sink     *promsink.PrometheusSink
	requests *requestMetrics
}

// NewMetrics makes the metrics of node nodeID, with a latency histogram for
// each of apiKeys.
func NewMetrics(nodeID int32, apiKeys []int16) (*Metrics, error) {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	// No Expiration: a gauge set on membership changes only (members,
	// partitions led) must not vanish from /metrics a minute later.
	sink, err := promsink.NewPrometheusSinkFrom(promsink.PrometheusOpts{
		Name:       fmt.Sprintf("spool_node_%d", nodeID),
		Registerer: m.Registry,
	})
	if err != nil {
		return nil, fmt.Errorf("metrics sink: %w", err)
	}
	m.sink = sink
	mc := metrics.DefaultConfig("spool")
	mc.EnableHostname = false
	mc.EnableRuntimeMetrics = false
	mc.EnableServiceLabel = false
	if m.Metrics, err = metrics.New(mc, sink); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if m.requests, err = newRequestMetrics(m.Registry, apiKeys); err != nil {
		return nil, fmt.Errorf("request metrics: %w", err)
	}
	return m, nil
}

// SetGlobal points the global go-metrics, which Serf and memberlist write
// to, at these metrics' sink.
func (m *Metrics) SetGlobal() error {
	gc := metrics.DefaultConfig("")
	gc.EnableHostname = false
	gc.EnableRuntimeMetrics = false
	gc.EnableServiceLabel = false
	if _, err := metrics.NewGlobal(gc, m.sink); err != nil {
		return fmt.Errorf("global metrics: %w", err)
	}
	return nil
}

// ObserveRequest records one handled request of API key since start.
func (m *Metrics) ObserveRequest(key int16, start time.Time) { m.requests.observe(key, start) }

// requestMetrics holds one latency histogram per API key of the table.
type requestMetrics struct {
	byKey map[int16]prometheus.Observer
}

func newRequestMetrics(reg prometheus.Registerer, keys []int16) (*requestMetrics, error) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spool_kafka_request_seconds",
		Help:    "Time from a decoded Kafka request to its response being ready, per API; _count counts requests.",
		Buckets: requestLatencyBuckets,
	}, []string{"api"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	m := &requestMetrics{byKey: make(map[int16]prometheus.Observer, len(keys))}
	for _, key := range keys {
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
