package access

// Client quotas on the request path (node/quota): Produce counts the
// record bytes a client sends, Fetch the record bytes it is sent, the
// node's ServeKafka each request's handler time, CreateTopics,
// CreatePartitions and DeleteTopics the partitions they create or delete,
// and the Kafka listeners the connections each address opens. A client
// over its quota gets its response with ThrottleMillis set and its
// connection muted for that long after it (wire.Throttle, KIP-219).

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/wire"
)

// Quotas is the quota manager, for what the request path does not cover
// (the admin view, tests).
func (g *Guard) Quotas() *quota.Manager { return g.quotas }

// quotaLookup finds the quota of kind that applies to wreq's client,
// through its connection's cache (a lookup only when the catalog or the
// client's names changed).
func (g *Guard) quotaLookup(ctx context.Context, wreq *wire.Request, kind quota.Kind) (quota.Applied, bool) {
	return g.quotaLookupOf(ConnOf(ctx), wreq, kind)
}

func (g *Guard) quotaLookupOf(c *Conn, wreq *wire.Request, kind quota.Kind) (quota.Applied, bool) {
	user, clientID := quotaClientOf(c, wreq)
	if c == nil {
		return g.quotas.Lookup(kind, user, clientID)
	}
	return g.quotas.LookupCached(&c.quotas, kind, user, clientID)
}

// ThrottleMillis is d for a response's ThrottleMillis, rounded up.
func ThrottleMillis(d time.Duration) int32 {
	return int32((d + time.Millisecond - 1) / time.Millisecond)
}

// ProduceQuota records a Produce's bytes and returns how long its client
// is throttled for (0: not), muting its connection for that long.
func (g *Guard) ProduceQuota(ctx context.Context, wreq *wire.Request, bytes int64) time.Duration {
	if !g.quotas.Active(quota.Produce) {
		return 0
	}
	a, ok := g.quotaLookup(ctx, wreq, quota.Produce)
	if !ok {
		return 0
	}
	d := g.quotas.RecordApplied(a, bytes)
	wire.Throttle(ctx, d)
	return d
}

// FetchQuotaBound finds the consumer_byte_rate of a Fetch's client and,
// when there is one, bounds the request's MaxBytes by what the quota lets
// through now (quota.Manager.Allowance: at most what it lets through in a
// window, Kafka's bound), so one response neither overshoots it by much
// nor is thrown away for taking the client past it.
func (g *Guard) FetchQuotaBound(ctx context.Context, wreq *wire.Request, req *kmsg.FetchRequest) (quota.Applied, bool) {
	if !g.quotas.Active(quota.Fetch) {
		return quota.Applied{}, false
	}
	a, ok := g.quotaLookup(ctx, wreq, quota.Fetch)
	if ok {
		req.MaxBytes = int32(min(int64(req.MaxBytes), max(g.quotas.Allowance(a), 1)))
	}
	return a, ok
}

// FetchQuota records a Fetch response's bytes. Over the quota, as Kafka
// does, the bytes are taken back and the client gets an empty response
// with ThrottleMillis set, its connection muted for that long.
func (g *Guard) FetchQuota(ctx context.Context, a quota.Applied, resp *wire.FetchResponse, size int64) (*wire.FetchResponse, int64) {
	d := g.quotas.RecordApplied(a, size)
	if d == 0 {
		return resp, size
	}
	g.quotas.Unrecord(a, size)
	out := &wire.FetchResponse{ThrottleMillis: ThrottleMillis(d), SessionID: resp.SessionID}
	resp.Release()
	wire.Throttle(ctx, d)
	return out, 0
}

// MutationQuota is one CreateTopics, CreatePartitions or DeleteTopics
// request's view of its client's controller_mutation_rate (KIP-599):
// strict requests have a topic refused while the client is over it;
// every request records the partitions it created or deleted and is
// throttled until the client is back within it.
type MutationQuota struct {
	quotas *quota.Manager
	a      quota.Applied
	on     bool
	strict bool
}

// MutationQuota is wreq's view of its client's mutation quota.
func (g *Guard) MutationQuota(ctx context.Context, wreq *wire.Request, strict bool) MutationQuota {
	if !g.quotas.Active(quota.Mutation) {
		return MutationQuota{}
	}
	a, ok := g.quotaLookup(ctx, wreq, quota.Mutation)
	return MutationQuota{quotas: g.quotas, a: a, on: ok, strict: strict}
}

// ErrMutationQuotaExceeded refuses a topic a strict request may not
// change now (Kafka's THROTTLING_QUOTA_EXCEEDED).
var ErrMutationQuotaExceeded = errors.New("the controller mutation rate quota is exceeded; retry after the throttle time")

// Refused is ErrMutationQuotaExceeded when the request may not change a
// topic now, nil when it may.
func (q MutationQuota) Refused() error {
	if q.on && q.strict && q.quotas.MutationsExceeded(q.a) {
		return ErrMutationQuotaExceeded
	}
	return nil
}

// Record counts partitions created or deleted.
func (q MutationQuota) Record(partitions int) {
	if q.on && partitions > 0 {
		q.quotas.RecordMutations(q.a, partitions)
	}
}

// Throttle is the response's ThrottleMillis, the connection muted as
// long.
func (q MutationQuota) Throttle(ctx context.Context) int32 {
	if !q.on {
		return 0
	}
	d := q.quotas.MutationThrottle(q.a)
	wire.Throttle(ctx, d)
	return ThrottleMillis(d)
}

// admitConnection is the Kafka listeners' wire.ListenerOptions.Admit: an
// address past its connection_creation_rate has its connection closed,
// unserved, after the throttle time (KIP-612).
func (g *Guard) admitConnection(remote net.Addr) time.Duration {
	if !g.quotas.Active(quota.Connection) {
		return 0
	}
	var ip string
	switch a := remote.(type) {
	case *net.TCPAddr:
		ip = a.IP.String()
	default:
		host, _, err := net.SplitHostPort(remote.String())
		if err != nil {
			return 0
		}
		ip = host
	}
	return g.quotas.AdmitConnection(ip)
}

// RequestQuota counts a request's time against its client's
// request_percentage (KIP-124) and, over it, sets the response's
// ThrottleMillis (the larger of this and a throttle already set) and
// mutes the connection. Kafka counts the time its I/O threads (the
// handler) and its network threads (decoding the request, encoding and
// writing the response) spend on a request; so does Spool, on the clock:
// the handler's time and the frame's decoding here, the response's
// encoding once it is written (RequestQuotaWritten, counted without a
// throttle, so the next request finds the rate the higher for it, as
// Kafka's recordNoThrottle). The write syscalls are not timed (see
// wire.WriteObserver: the clock would count the wait for a core after
// them). Not counted: a request that may wait (a long-poll Fetch,
// JoinGroup, SyncGroup, ElectLeaders: Deps.Waits), as its time is mostly
// waiting, and the SASL exchange (Kafka exempts it). Counted though Kafka
// would not: a Produce's wait for its replicas (Kafka's handler thread is
// free meanwhile; here the clock runs).
func (g *Guard) RequestQuota(ctx context.Context, wreq *wire.Request, resp wire.Response, took time.Duration) {
	if !g.requestQuotaCounts(wreq) {
		return
	}
	c := ConnOf(ctx)
	if c != nil {
		took += c.pendingRequestTime
		c.pendingRequestTime = 0
	}
	a, ok := g.quotaLookupOf(c, wreq, quota.Request)
	if !ok {
		return
	}
	d := g.quotas.RecordApplied(a, int64(took))
	if d <= 0 {
		return
	}
	ms := ThrottleMillis(d)
	switch r := resp.(type) {
	case *wire.FetchResponse:
		r.ThrottleMillis = max(r.ThrottleMillis, ms)
	case kmsg.ThrottleResponse:
		if cur, _ := r.Throttle(); cur < ms {
			if s, ok := resp.(kmsg.SetThrottleResponse); ok {
				s.SetThrottle(ms)
			}
		}
	}
	wire.Throttle(ctx, d)
}

// requestQuotaCounts tells whether wreq's time counts against a
// request_percentage.
func (g *Guard) requestQuotaCounts(wreq *wire.Request) bool {
	if !g.quotas.Active(quota.Request) || g.deps.Waits(wreq) {
		return false
	}
	switch kmsg.Key(wreq.APIKey) {
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate, kmsg.ApiVersions:
		return false
	}
	return true
}

// RequestQuotaWritten counts the time a response took to encode against
// its client's request_percentage, without a throttle: on a connection,
// with its next request's time (one record a request, not two; the
// throttle decided then is the one Kafka's would be, as a rate is only
// ever checked at a request).
func (g *Guard) RequestQuotaWritten(ctx context.Context, wreq *wire.Request, took time.Duration) {
	if !g.requestQuotaCounts(wreq) {
		return
	}
	c := ConnOf(ctx)
	if c != nil {
		c.pendingRequestTime += took
		return
	}
	user, clientID := quotaClientOf(c, wreq)
	g.quotas.RecordNoThrottle(quota.Request, user, clientID, int64(took))
}

// quotaMetricKey names one quota rate in the metrics.
type quotaMetricKey struct {
	kind           quota.Kind
	user, clientID string
}

// FlushQuotaMetrics emits, per client a byte-rate quota applies to, the
// bytes counted and the throttles since the last flush
// (spool_quota_bytes, spool_quota_throttled_requests,
// spool_quota_throttle_seconds, labelled kind, user and client_id; a
// rate dropped for idleness counts again from nothing), and the
// connections refused for their address's connection_creation_rate
// (spool_quota_connections_throttled). One flush runs at a time (the
// node's flushMetrics); it alone advances the flushed marks.
func (g *Guard) FlushQuotaMetrics(out Counters) {
	totals := g.quotas.Totals()
	next := make(map[quotaMetricKey]quota.Total, len(totals))
	for _, t := range totals {
		k := quotaMetricKey{t.Kind, t.User, t.ClientID}
		next[k] = t
		was := g.flushedQuotas[k]
		if t.Bytes < was.Bytes || t.Throttled < was.Throttled {
			was = quota.Total{} // a new rate since
		}
		var kind string
		switch t.Kind {
		case quota.Produce:
			kind = "produce"
		case quota.Fetch:
			kind = "fetch"
		default:
			continue // byte rates only
		}
		labels := []metrics.Label{{Name: "kind", Value: kind}, {Name: "user", Value: t.User}, {Name: "client_id", Value: t.ClientID}}
		if d := t.Bytes - was.Bytes; d > 0 {
			out.IncrCounterWithLabels([]string{"quota", "bytes"}, float32(d), labels)
		}
		if d := t.Throttled - was.Throttled; d > 0 {
			out.IncrCounterWithLabels([]string{"quota", "throttled", "requests"}, float32(d), labels)
			out.IncrCounterWithLabels([]string{"quota", "throttle", "seconds"}, float32((t.ThrottleTime - was.ThrottleTime).Seconds()), labels)
		}
	}
	g.flushedQuotas = next
	if st, ok := g.deps.ServerStats(); ok {
		now := st.ConnectionsThrottled
		if d := now - g.flushedConnsThrottled; d > 0 {
			out.IncrCounter([]string{"quota", "connections", "throttled"}, float32(d))
		}
		g.flushedConnsThrottled = now
	}
}
