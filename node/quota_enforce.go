package node

// Client quotas on the request path (node/quota): Produce counts the
// record bytes a client sends, Fetch the record bytes it is sent,
// ServeKafka each request's handler time, CreateTopics, CreatePartitions
// and DeleteTopics the partitions they create or delete, and the Kafka
// listeners the connections each address opens. A client over its quota
// gets its response with ThrottleMillis set and its connection muted for
// that long after it (wire.Throttle, KIP-219).

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/authz"
	"github.com/spool-log/spool/node/quota"
	"github.com/spool-log/spool/wire"
)

// quotaSource is the membership catalog's quotas, none before Start.
type quotaSource struct{ n *Node }

func (s quotaSource) Quotas() []membership.QuotaEntry {
	if s.n.agent == nil {
		return nil
	}
	return s.n.agent.Quotas()
}

// QuotasGeneration is the agent's, plus one: a table built before the
// agent existed is rebuilt once it does, whatever its generation.
func (s quotaSource) QuotasGeneration() uint64 {
	if s.n.agent == nil {
		return 0
	}
	return s.n.agent.QuotasGeneration() + 1
}

// quotaClient is who a request's quotas are looked up for: Kafka's user
// is the principal's name (ANONYMOUS when not authenticated), the client
// id as sent ("" for null).
func quotaClient(ctx context.Context, wreq *wire.Request) (user, clientID string) {
	return quotaClientOf(connStateOf(ctx), wreq)
}

// anonymousQuotaUser is the user of a client that did not authenticate.
var anonymousQuotaUser = strings.TrimPrefix(authz.Anonymous, "User:")

// quotaClientOf is quotaClient for a connection's state: principalOf's
// name without building the principal's string (no allocation on the
// request path).
func quotaClientOf(cs *connState, wreq *wire.Request) (user, clientID string) {
	user = anonymousQuotaUser
	if cs != nil {
		if u := cs.sasl.User(); u != "" {
			user = u
		} else if cs.tlsPeer != "" {
			user = cs.tlsPeer
		}
	}
	if wreq.ClientID != nil {
		clientID = *wreq.ClientID
	}
	return user, clientID
}

// quotaLookup finds the quota of kind that applies to wreq's client,
// through its connection's cache (a lookup only when the catalog or the
// client's names changed).
func (n *Node) quotaLookup(ctx context.Context, wreq *wire.Request, kind quota.Kind) (quota.Applied, bool) {
	return n.quotaLookupOf(connStateOf(ctx), wreq, kind)
}

func (n *Node) quotaLookupOf(cs *connState, wreq *wire.Request, kind quota.Kind) (quota.Applied, bool) {
	user, clientID := quotaClientOf(cs, wreq)
	if cs == nil {
		return n.quotas.Lookup(kind, user, clientID)
	}
	return n.quotas.LookupCached(&cs.quotas, kind, user, clientID)
}

// throttleMillis is d for a response's ThrottleMillis, rounded up.
func throttleMillis(d time.Duration) int32 {
	return int32((d + time.Millisecond - 1) / time.Millisecond)
}

// produceQuota records a Produce's bytes and returns how long its client
// is throttled for (0: not), muting its connection for that long.
func (n *Node) produceQuota(ctx context.Context, wreq *wire.Request, bytes int64) time.Duration {
	if !n.quotas.Active(quota.Produce) {
		return 0
	}
	a, ok := n.quotaLookup(ctx, wreq, quota.Produce)
	if !ok {
		return 0
	}
	d := n.quotas.RecordApplied(a, bytes)
	wire.Throttle(ctx, d)
	return d
}

// fetchQuotaBound finds the consumer_byte_rate of a Fetch's client and,
// when there is one, bounds the request's MaxBytes by what the quota lets
// through now (quota.Manager.Allowance: at most what it lets through in a
// window, Kafka's bound), so one response neither overshoots it by much
// nor is thrown away for taking the client past it.
func (n *Node) fetchQuotaBound(ctx context.Context, wreq *wire.Request, req *kmsg.FetchRequest) (quota.Applied, bool) {
	if !n.quotas.Active(quota.Fetch) {
		return quota.Applied{}, false
	}
	a, ok := n.quotaLookup(ctx, wreq, quota.Fetch)
	if ok {
		req.MaxBytes = int32(min(int64(req.MaxBytes), max(n.quotas.Allowance(a), 1)))
	}
	return a, ok
}

// fetchQuota records a Fetch response's bytes. Over the quota, as Kafka
// does, the bytes are taken back and the client gets an empty response
// with ThrottleMillis set, its connection muted for that long.
func (n *Node) fetchQuota(ctx context.Context, a quota.Applied, resp *wire.FetchResponse, size int64) (*wire.FetchResponse, int64) {
	d := n.quotas.RecordApplied(a, size)
	if d == 0 {
		return resp, size
	}
	n.quotas.Unrecord(a, size)
	out := &wire.FetchResponse{ThrottleMillis: throttleMillis(d), SessionID: resp.SessionID}
	resp.Release()
	wire.Throttle(ctx, d)
	return out, 0
}

// mutationQuota is one CreateTopics, CreatePartitions or DeleteTopics
// request's view of its client's controller_mutation_rate (KIP-599):
// strict requests have a topic refused while the client is over it;
// every request records the partitions it created or deleted and is
// throttled until the client is back within it.
type mutationQuota struct {
	n      *Node
	a      quota.Applied
	on     bool
	strict bool
}

func (n *Node) mutationQuotaOf(ctx context.Context, wreq *wire.Request, strict bool) mutationQuota {
	if !n.quotas.Active(quota.Mutation) {
		return mutationQuota{}
	}
	a, ok := n.quotaLookup(ctx, wreq, quota.Mutation)
	return mutationQuota{n: n, a: a, on: ok, strict: strict}
}

const mutationQuotaExceeded = "the controller mutation rate quota is exceeded; retry after the throttle time"

// refused is the error of a topic a strict request may not change now,
// nil when it may.
func (q mutationQuota) refused() error {
	if q.on && q.strict && q.n.quotas.MutationsExceeded(q.a) {
		return &topicError{kerr.ThrottlingQuotaExceeded, mutationQuotaExceeded}
	}
	return nil
}

func (q mutationQuota) record(partitions int) {
	if q.on && partitions > 0 {
		q.n.quotas.RecordMutations(q.a, partitions)
	}
}

// throttle is the response's ThrottleMillis, the connection muted as
// long.
func (q mutationQuota) throttle(ctx context.Context) int32 {
	if !q.on {
		return 0
	}
	d := q.n.quotas.MutationThrottle(q.a)
	wire.Throttle(ctx, d)
	return throttleMillis(d)
}

// quotaMetricKey names one quota rate in the metrics.
type quotaMetricKey struct {
	kind           quota.Kind
	user, clientID string
}

// flushQuotaMetrics emits, per client a byte-rate quota applies to, the
// bytes counted and the throttles since the last flush
// (spool_quota_bytes, spool_quota_throttled_requests,
// spool_quota_throttle_seconds, labelled kind, user and client_id; a
// rate dropped for idleness counts again from nothing), and the
// connections refused for their address's connection_creation_rate
// (spool_quota_connections_throttled).
func (n *Node) flushQuotaMetrics() {
	totals := n.quotas.Totals()
	next := make(map[quotaMetricKey]quota.Total, len(totals))
	for _, t := range totals {
		k := quotaMetricKey{t.Kind, t.User, t.ClientID}
		next[k] = t
		was := n.flushedQuotas[k]
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
			n.metrics.IncrCounterWithLabels([]string{"quota", "bytes"}, float32(d), labels)
		}
		if d := t.Throttled - was.Throttled; d > 0 {
			n.metrics.IncrCounterWithLabels([]string{"quota", "throttled", "requests"}, float32(d), labels)
			n.metrics.IncrCounterWithLabels([]string{"quota", "throttle", "seconds"}, float32((t.ThrottleTime - was.ThrottleTime).Seconds()), labels)
		}
	}
	n.flushedQuotas = next
	if n.server != nil {
		now := n.server.Stats().ConnectionsThrottled
		if d := now - n.flushedConnsThrottled; d > 0 {
			n.metrics.IncrCounter([]string{"quota", "connections", "throttled"}, float32(d))
		}
		n.flushedConnsThrottled = now
	}
}

// admitConnection is the Kafka listeners' wire.ListenerOptions.Admit: an
// address past its connection_creation_rate has its connection closed,
// unserved, after the throttle time (KIP-612).
func (n *Node) admitConnection(remote net.Addr) time.Duration {
	if !n.quotas.Active(quota.Connection) {
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
	return n.quotas.AdmitConnection(ip)
}

// requestQuota counts a request's time against its client's
// request_percentage (KIP-124) and, over it, sets the response's
// ThrottleMillis (the larger of this and a throttle already set) and
// mutes the connection. Kafka counts the time its I/O threads (the
// handler) and its network threads (decoding the request, encoding and
// writing the response) spend on a request; so does Spool, on the clock:
// the handler's time and the frame's decoding here, the response's
// encoding once it is written (requestQuotaWritten, counted without a
// throttle, so the next request finds the rate the higher for it, as
// Kafka's recordNoThrottle). The write syscalls are not timed (see
// wire.WriteObserver: the clock would count the wait for a core after
// them). Not counted: a request that may wait
// (a long-poll Fetch, JoinGroup, SyncGroup, ElectLeaders), as its time is
// mostly waiting, and the SASL exchange (Kafka exempts it). Counted
// though Kafka would not: a Produce's wait for its replicas (Kafka's
// handler thread is free meanwhile; here the clock runs).
func (n *Node) requestQuota(ctx context.Context, wreq *wire.Request, resp wire.Response, took time.Duration) {
	if !n.requestQuotaCounts(wreq) {
		return
	}
	cs := connStateOf(ctx)
	if cs != nil {
		took += cs.pendingRequestTime
		cs.pendingRequestTime = 0
	}
	a, ok := n.quotaLookupOf(cs, wreq, quota.Request)
	if !ok {
		return
	}
	d := n.quotas.RecordApplied(a, int64(took))
	if d <= 0 {
		return
	}
	ms := throttleMillis(d)
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
func (n *Node) requestQuotaCounts(wreq *wire.Request) bool {
	if !n.quotas.Active(quota.Request) || requestWaits(wreq) {
		return false
	}
	switch kmsg.Key(wreq.APIKey) {
	case kmsg.SASLHandshake, kmsg.SASLAuthenticate, kmsg.ApiVersions:
		return false
	}
	return true
}

// requestQuotaWritten counts the time a response took to encode against
// its client's request_percentage, without a throttle: on
// a connection, with its next request's time (one record a request, not
// two; the throttle decided then is the one Kafka's would be, as a rate
// is only ever checked at a request).
func (n *Node) requestQuotaWritten(ctx context.Context, wreq *wire.Request, took time.Duration) {
	if !n.requestQuotaCounts(wreq) {
		return
	}
	if cs := connStateOf(ctx); cs != nil {
		cs.pendingRequestTime += took
		return
	}
	user, clientID := quotaClient(ctx, wreq)
	n.quotas.RecordNoThrottle(quota.Request, user, clientID, int64(took))
}
