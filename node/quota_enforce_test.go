package node

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/quota"
)

// throttleCount is a kgo hook counting the throttles brokers report.
type throttleCount struct{ n atomic.Int64 }

func (h *throttleCount) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
	}
}

// quotaTotal is the broker's own count of what kind's rate for clientID
// (kept per client id alone) took.
func quotaTotal(n *Node, kind quota.Kind, clientID string) quota.Total {
	for _, t := range n.access.Quotas().Totals() {
		if t.Kind == kind && t.ClientID == clientID && t.User == "" {
			return t
		}
	}
	return quota.Total{}
}

func setClientQuota(t *testing.T, adm *kadm.Client, clientID, key string, v float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{qc("client-id", kmsg.StringPtr(clientID))}, Ops: []kadm.AlterClientQuotaOp{qset(key, v)}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("set %s %s=%v: %v %+v", clientID, key, v, err, res)
	}
}

// quotaTestConfig is a node whose quota window is 11 samples of 100 ms
// (Kafka's 11 of 1 s, scaled so a test of seconds sees the rate settle).
func quotaTestConfig(t *testing.T) Config {
	cfg := testConfig(t, t.TempDir())
	cfg.Quota = quota.Config{Samples: 11, SampleWindow: 100 * time.Millisecond, MaxThrottle: 100 * time.Millisecond}
	return cfg
}

// Two producers on one node, one with a 1 MiB/s producer_byte_rate on its
// client id: over 4 s the broker accepts at most 1.3 times the quota from
// it (the window lets an idle client send Samples-1 windows' worth at
// once, here 1 s: about 1.2 times over 4 s, closer to 1 over longer, see
// TestQuotaLongRunHoldsTheRate), the client is told to back off, and the
// other producer is neither throttled nor held back to anything like the
// quota.
func TestQuotaProducerByteRate(t *testing.T) {
	const rate = 1 << 20
	n := startNode(t, quotaTestConfig(t))
	adm := newAdmin(t, n)
	createTopic(t, adm, "quota-produce", 1, nil)
	setClientQuota(t, adm, "slow", "producer_byte_rate", rate)

	produce := func(clientID string, hook *throttleCount, stop <-chan struct{}, acked *atomic.Int64, wg *sync.WaitGroup) {
		defer wg.Done()
		cl := newClient(t, n, kgo.ClientID(clientID), kgo.WithHooks(hook), kgo.DefaultProduceTopic("quota-produce"),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(64<<10), kgo.MaxBufferedRecords(32), kgo.ProducerLinger(0))
		value := make([]byte, 16<<10) // sent uncompressed: the bytes counted are these
		for {
			select {
			case <-stop:
				return
			default:
			}
			cl.Produce(context.Background(), &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					acked.Add(int64(len(r.Value)))
				}
			})
		}
	}
	var slowHook, fastHook throttleCount
	var slowAcked, fastAcked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	start := time.Now()
	go produce("slow", &slowHook, stop, &slowAcked, &wg)
	go produce("fast", &fastHook, stop, &fastAcked, &wg)
	time.Sleep(4 * time.Second)
	taken := quotaTotal(n, quota.Produce, "slow")
	elapsed := time.Since(start)
	fast := fastAcked.Load()
	close(stop)
	wg.Wait()

	allowed := 1.3 * rate * elapsed.Seconds()
	t.Logf("in %v: slow taken %d bytes (%.2f× the quota, %d throttles), fast acked %d bytes (%.1f MiB/s)",
		elapsed, taken.Bytes, float64(taken.Bytes)/(rate*elapsed.Seconds()), taken.Throttled, fast, float64(fast)/elapsed.Seconds()/(1<<20))
	if float64(taken.Bytes) > allowed {
		t.Errorf("the broker took %d bytes from the throttled client in %v, over 1.3× its quota (%.0f)", taken.Bytes, elapsed, allowed)
	}
	if float64(taken.Bytes) < 0.5*rate*elapsed.Seconds() {
		t.Errorf("the broker took only %d bytes from the throttled client in %v: held back well below its quota", taken.Bytes, elapsed)
	}
	if taken.Throttled == 0 || slowHook.n.Load() == 0 {
		t.Errorf("the throttled client was never told: %d throttles counted, %d seen by the client", taken.Throttled, slowHook.n.Load())
	}
	if fastHook.n.Load() != 0 {
		t.Errorf("the client without a quota saw %d throttles", fastHook.n.Load())
	}
	if got := quotaTotal(n, quota.Produce, "fast"); got.Bytes != 0 {
		t.Errorf("the client without a quota was counted: %+v", got)
	}
	if float64(fast) < 2*rate*elapsed.Seconds() {
		t.Errorf("the client without a quota got %d bytes through in %v, under twice the other's quota", fast, elapsed)
	}
	// /metrics shows the throttled client's bytes and throttles, and
	// nothing of the other.
	retry.Run(t, 20*time.Second, func() error {
		var bytes, throttled bool
		for series, v := range scrapeMetrics(n) {
			if strings.Contains(series, `client_id="fast"`) {
				return fmt.Errorf("/metrics counts the client without a quota: %s", series)
			}
			if !strings.Contains(series, `client_id="slow"`) || !strings.Contains(series, `kind="produce"`) || v <= 0 {
				continue
			}
			bytes = bytes || strings.Contains(series, "_quota_bytes")
			throttled = throttled || strings.Contains(series, "_quota_throttled_requests")
		}
		return retry.Check(bytes && throttled, "quota series for client slow (bytes %v, throttled %v)", bytes, throttled)
	})
}

// A consumer with a 1 MiB/s consumer_byte_rate reading a large topic from
// the start is sent at most 1.3 times its quota over 4 s (Kafka's window lets a
// client that was idle take Samples-1 windows' worth at once: here 1 s), while another
// consumer of the same topic on the same node is not throttled.
func TestQuotaConsumerByteRate(t *testing.T) {
	const rate = 1 << 20
	n := startNode(t, quotaTestConfig(t))
	adm := newAdmin(t, n)
	const topic = "quota-fetch"
	createTopic(t, adm, topic, 1, nil)
	pr := newClient(t, n, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var recs []*kgo.Record
	for i := 0; i < 2048; i++ { // 32 MiB, stored as sent
		value := make([]byte, 16<<10)
		rand.Read(value)
		recs = append(recs, &kgo.Record{Value: value})
	}
	if err := pr.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	setClientQuota(t, adm, "slowc", "consumer_byte_rate", rate)

	consume := func(clientID string, hook *throttleCount, d time.Duration) int64 {
		cl := newClient(t, n, kgo.ClientID(clientID), kgo.WithHooks(hook), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(4<<20), kgo.FetchMaxPartitionBytes(256<<10))
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var got int64
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
		}
		return got
	}
	var slowHook, fastHook throttleCount
	start := time.Now()
	consume("slowc", &slowHook, 4*time.Second)
	elapsed := time.Since(start)
	taken := quotaTotal(n, quota.Fetch, "slowc")
	fast := consume("fastc", &fastHook, 3*time.Second)
	t.Logf("in %v: slow sent %d bytes (%.2f× the quota, %d throttles); fast got %d bytes", elapsed, taken.Bytes,
		float64(taken.Bytes)/(rate*elapsed.Seconds()), taken.Throttled, fast)
	if allowed := 1.3 * rate * elapsed.Seconds(); float64(taken.Bytes) > allowed {
		t.Errorf("the node sent the throttled consumer %d bytes in %v, over 1.3× its quota (%.0f)", taken.Bytes, elapsed, allowed)
	}
	if float64(taken.Bytes) < 0.5*rate*elapsed.Seconds() {
		t.Errorf("the throttled consumer got only %d bytes in %v", taken.Bytes, elapsed)
	}
	if taken.Throttled == 0 || slowHook.n.Load() == 0 {
		t.Errorf("the throttled consumer was never told: %d throttles, %d seen", taken.Throttled, slowHook.n.Load())
	}
	if fastHook.n.Load() != 0 || fast < 16<<20 {
		t.Errorf("the consumer without a quota: %d throttles, %d bytes in 3 s", fastHook.n.Load(), fast)
	}
}

// controller_mutation_rate (KIP-599): a client over its rate has its next
// topics refused with THROTTLING_QUOTA_EXCEEDED (strict versions) and is
// told to back off; a client without a quota is not.
func TestQuotaControllerMutationRate(t *testing.T) {
	cfg := quotaTestConfig(t)
	cfg.Quota.SampleWindow = 200 * time.Millisecond // burst: 2/s × 11 × 200 ms = 4.4 partitions
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	setClientQuota(t, adm, "mutator", "controller_mutation_rate", 2)
	ctx := testCtx(t)
	create := func(cl *kgo.Client, version int16, topics map[string]int32, order ...string) *kmsg.CreateTopicsResponse {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = version
		req.TimeoutMillis = 10000
		for _, name := range order {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, topics[name], 1
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	codes := func(resp *kmsg.CreateTopicsResponse) map[string]int16 {
		out := map[string]int16{}
		for _, t := range resp.Topics {
			out[t.Topic] = t.ErrorCode
		}
		return out
	}
	mut := newClient(t, n, kgo.ClientID("mutator"))
	resp := create(mut, 7, map[string]int32{"m-a": 4, "m-b": 3, "m-c": 1}, "m-a", "m-b", "m-c")
	c := codes(resp)
	if c["m-a"] != 0 || c["m-b"] != 0 || c["m-c"] != kerr.ThrottlingQuotaExceeded.Code {
		t.Errorf("strict create of 4, 3, 1 partitions at 2/s (burst 4.4): codes %v, want ok, ok, THROTTLING_QUOTA_EXCEEDED", c)
	}
	// 4.4 - 7 = -2.6 partitions: 1.3 s at 2/s.
	if resp.ThrottleMillis < 1000 || resp.ThrottleMillis > 1400 {
		t.Errorf("throttle %d ms, want about 1300", resp.ThrottleMillis)
	}
	// A client without a quota is not held back.
	free := newClient(t, n, kgo.ClientID("free"))
	resp = create(free, 7, map[string]int32{"f-a": 8, "f-b": 8}, "f-a", "f-b")
	if c := codes(resp); c["f-a"] != 0 || c["f-b"] != 0 || resp.ThrottleMillis != 0 {
		t.Errorf("client without a quota: codes %v, throttle %d", c, resp.ThrottleMillis)
	}
	// v5 is permissive: everything goes through, and the throttle says
	// how far over it went (kgo picks the newest version, so this one is
	// sent as is, by the client id versionConn sends).
	setClientQuota(t, adm, "versions-test", "controller_mutation_rate", 2)
	vc := dialVersions(t, n.KafkaAddr())
	preq := kmsg.NewPtrCreateTopicsRequest()
	preq.Version, preq.TimeoutMillis = 5, 10000
	for _, name := range []string{"p-a", "p-b"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 4, 1
		preq.Topics = append(preq.Topics, rt)
	}
	resp = roundTrip[*kmsg.CreateTopicsResponse](t, vc, preq)
	if c := codes(resp); c["p-a"] != 0 || c["p-b"] != 0 || resp.ThrottleMillis < 1000 {
		t.Errorf("permissive create past the quota: codes %v, throttle %d, want both made and a throttle", c, resp.ThrottleMillis)
	}
	// Deletes count too: strict DeleteTopics refuses while over, once the
	// first topic took the client back over.
	applied, ok := n.access.Quotas().Lookup(quota.Mutation, "ANONYMOUS", "mutator")
	if !ok {
		t.Fatal("no mutation quota applies to the client id mutator")
	}
	retry.Run(t, 10*time.Second, func() error {
		return retry.Check(!n.access.Quotas().MutationsExceeded(applied), "the bucket back at zero")
	})
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version, del.TimeoutMillis = 6, 10000
	for _, name := range []string{"f-a", "f-b", "m-a"} {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(name)
		del.Topics = append(del.Topics, dt)
	}
	dresp, err := del.RequestWith(ctx, mut)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, dt := range dresp.Topics {
		got[*dt.Topic] = dt.ErrorCode
	}
	if got["f-a"] != 0 || got["m-a"] != kerr.ThrottlingQuotaExceeded.Code || dresp.ThrottleMillis == 0 {
		t.Errorf("strict delete of 8, 8, 4 partitions: codes %v, throttle %d, want the first deleted and the last refused", got, dresp.ThrottleMillis)
	}
}

// connection_creation_rate (KIP-612): connections from an address past
// its rate are closed unserved after the throttle time; those already
// open go on, and once the rate is back new ones are served.
func TestQuotaConnectionCreationRate(t *testing.T) {
	n := startNode(t, quotaTestConfig(t)) // 1/s over a window of at least 1 s: one connection at once
	adm := newAdmin(t, n)
	if _, err := adm.BrokerMetadata(testCtx(t)); err != nil { // the admin client's connections, opened before
		t.Fatal(err)
	}
	res, err := adm.AlterClientQuotas(testCtx(t), []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{qc("ip", kmsg.StringPtr("127.0.0.1"))}, Ops: []kadm.AlterClientQuotaOp{qset("connection_creation_rate", 1)}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set the ip quota: %v %+v", err, res)
	}
	served, refused := 0, 0
	for i := 0; i < 5; i++ {
		vc := dialVersions(t, n.KafkaAddr())
		if _, err := vc.exchange(kmsg.NewPtrApiVersionsRequest()); err != nil {
			refused++
		} else {
			served++
		}
	}
	if served > 1 || refused == 0 {
		t.Errorf("5 connections at once at 1/s: %d served, %d refused; want at most the first served", served, refused)
	}
	if got := n.server.Stats().ConnectionsThrottled; got != int64(refused) {
		t.Errorf("%d connections counted throttled, %d refused", got, refused)
	}
	if _, err := adm.BrokerMetadata(testCtx(t)); err != nil {
		t.Errorf("a connection opened before the quota: %v", err)
	}
	retry.Run(t, 20*time.Second, func() error {
		return scrapeMetrics(n).check("spool_quota_connections_throttled", func(v float64) bool { return v == float64(refused) }, fmt.Sprint(refused))
	})
	// Served again once the rate is back within the quota.
	retry.Run(t, 10*time.Second, func() error {
		vc := dialVersions(t, n.KafkaAddr())
		_, err := vc.exchange(kmsg.NewPtrApiVersionsRequest())
		return err
	})
}

// request_percentage (KIP-124): a client flooding ListOffsets with a 0.1 %
// share of a thread (1 ms of handling a second: a fraction of what it
// takes unthrottled) is throttled and the node spends at most about that
// on it, while a client without a quota
// flooding beside it is not throttled.
func TestQuotaRequestPercentage(t *testing.T) {
	n := startNode(t, quotaTestConfig(t))
	adm := newAdmin(t, n)
	createTopic(t, adm, "quota-requests", 1, nil)
	setClientQuota(t, adm, "flooder", "request_percentage", 0.1)
	flood := func(clientID string, hook *throttleCount, d time.Duration) int {
		cl := newClient(t, n, kgo.ClientID(clientID), kgo.WithHooks(hook))
		a := kadm.NewClient(cl)
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		count := 0
		for ctx.Err() == nil {
			if _, err := a.ListEndOffsets(ctx, "quota-requests"); err == nil {
				count++
			}
		}
		return count
	}
	var floodHook, calmHook throttleCount
	var flooded, calm int
	var wg sync.WaitGroup
	wg.Add(2)
	start := time.Now()
	go func() { defer wg.Done(); flooded = flood("flooder", &floodHook, 2*time.Second) }()
	go func() { defer wg.Done(); calm = flood("calm", &calmHook, 2*time.Second) }()
	wg.Wait()
	elapsed := time.Since(start)
	spent := time.Duration(quotaTotal(n, quota.Request, "flooder").Bytes)
	t.Logf("in %v: flooder %d requests (%d throttles, %v handling), calm %d (%d throttles)", elapsed, flooded, floodHook.n.Load(), spent, calm, calmHook.n.Load())
	// 1 ms a second, and the window's 1 s burst, with headroom: a rate
	// is checked after a request is counted, so it goes past the quota by
	// the last request before each throttle, and a request's time (its
	// decoding, handling and write, on the clock, as Kafka's) includes
	// whatever the calm client's flood beside it keeps it waiting for a
	// core: up to 7 ms over 2 s were seen on a busy 2-core machine.
	// Unthrottled, the same flood takes about a hundred times that.
	if allowed := time.Duration(2.5 * float64(time.Millisecond) * (elapsed.Seconds() + 1)); spent > allowed || spent <= 0 {
		t.Errorf("the node spent %v handling the throttled client in %v, want some and at most %v", spent, elapsed, allowed)
	}
	if floodHook.n.Load() == 0 {
		t.Error("the client over its request_percentage was never throttled")
	}
	if calmHook.n.Load() != 0 {
		t.Errorf("the client without a quota was throttled %d times", calmHook.n.Load())
	}
	if flooded*2 > calm {
		t.Errorf("the throttled client made %d requests, the one without a quota %d: not held back", flooded, calm)
	}
}
