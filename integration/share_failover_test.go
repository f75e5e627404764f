package integration

// Share groups under a leader's kill -9: acknowledgements are durable
// (__share_group_state) before they are answered, so the new leader
// redelivers only what was not acknowledged. Checked with the history
// checker's share part: every record acknowledged exactly once or still
// available.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/integration/history"
	"github.com/spool-log/spool/internal/recordbatch"
)

// rawShareMember is a share member speaking ShareFetch and
// ShareAcknowledge itself, so that it knows, per record, whether the
// broker confirmed its accept.
type rawShareMember struct {
	t       testing.TB
	nodes   []*Node
	topic   string
	group   string
	member  string
	topicID [16]byte

	cl     *kgo.Client
	leader int32
	epoch  int32 // the next session epoch
}

func newRawShareMember(t testing.TB, nodes []*Node, topic, group, member string, topicID [16]byte) *rawShareMember {
	m := &rawShareMember{t: t, nodes: nodes, topic: topic, group: group, member: member, topicID: topicID, leader: -1}
	m.cl = franzClient(t, kafkaAddrs(nodes)[0], kgo.SeedBrokers(kafkaAddrs(nodes)...), kgo.RequestRetries(0))
	return m
}

// reset finds the partition's leader again and starts a new session.
func (m *rawShareMember) reset() {
	m.leader, m.epoch = -1, 0
	if id, err := leaderOf(m.t, m.nodes, m.topic, 0); err == nil {
		m.leader = id
	}
}

// fetch acquires up to max records: their offsets and values.
func (m *rawShareMember) fetch(ctx context.Context, max int32) (map[int64]string, error) {
	if m.leader < 0 {
		m.reset()
		if m.leader < 0 {
			return nil, errors.New("no leader")
		}
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member), m.epoch
	req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 300, 1<<20, max, max
	if m.epoch == 0 {
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = m.topicID
		ft.Partitions = append(ft.Partitions, kmsg.NewShareFetchRequestTopicPartition())
		req.Topics = append(req.Topics, ft)
	}
	raw, err := m.cl.Broker(int(m.leader)).Request(ctx, req)
	if err != nil {
		m.reset()
		return nil, err
	}
	m.epoch++
	resp := raw.(*kmsg.ShareFetchResponse)
	if resp.ErrorCode != 0 {
		m.reset()
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	out := map[int64]string{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				m.reset()
				return nil, kerr.ErrorForCode(rp.ErrorCode)
			}
			acquired := func(o int64) bool {
				for _, a := range rp.AcquiredRecords {
					if o >= a.FirstOffset && o <= a.LastOffset {
						return true
					}
				}
				return false
			}
			err := recordbatch.Walk(rp.Records, func(batch []byte, h recordbatch.Header) error {
				recs, err := recordbatch.ParseRecords(nil, batch[recordbatch.HeaderSize:], h.NumRecords, h.LastOffsetDelta)
				if err != nil {
					return err
				}
				for _, r := range recs {
					if o := h.BaseOffset + r.OffsetDelta; acquired(o) {
						out[o] = string(r.Value)
					}
				}
				return nil
			})
			if err != nil {
				m.t.Errorf("share fetch records: %v", err)
			}
		}
	}
	return out, nil
}

// accept acknowledges offsets: nil when the broker confirmed, a kerr
// error when it refused, another error when the outcome is unknown.
func (m *rawShareMember) accept(ctx context.Context, offsets []int64) error {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member), m.epoch
	at := kmsg.NewShareAcknowledgeRequestTopic()
	at.TopicID = m.topicID
	ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, o := range offsets {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = o, o, []int8{1}
		ap.AcknowledgementBatches = append(ap.AcknowledgementBatches, b)
	}
	at.Partitions = append(at.Partitions, ap)
	req.Topics = append(req.Topics, at)
	raw, err := m.cl.Broker(int(m.leader)).Request(ctx, req)
	if err != nil {
		m.reset()
		return err
	}
	m.epoch++
	resp := raw.(*kmsg.ShareAcknowledgeResponse)
	if resp.ErrorCode != 0 {
		m.reset()
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				m.reset()
				return kerr.ErrorForCode(rp.ErrorCode)
			}
		}
	}
	return nil
}

func sortedOffsets(m map[int64]string) []int64 {
	out := make([]int64, 0, len(m))
	for o := range m {
		out = append(out, o)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestShareGroupLeaderKill9HistoryChecked: three members accept records
// of an R=3 partition while its leader is killed with SIGKILL; every
// record is then acknowledged exactly once (the broker confirmed one
// accept) or still available to a final drain, none lost, none
// acknowledged twice.
func TestShareGroupLeaderKill9HistoryChecked(t *testing.T) {
	nodes := startCluster(t, 3)
	topic, group := uniqueTopic("sharekill9"), uniqueTopic("sg")
	adm := kadm.NewClient(franzClient(t, nodes[0].KafkaAddr))
	if _, err := adm.CreateTopic(ctxTimeout(t, 20*time.Second), 1, 3, nil, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitTopicEverywhere(t, nodes, topic)
	setShareConfigs(t, nodes[0].KafkaAddr, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "3000")

	const total = 1500
	h := history.NewShare()
	prod := franzClient(t, nodes[0].KafkaAddr, kgo.SeedBrokers(kafkaAddrs(nodes)...), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var batch []*kgo.Record
	for i := range total {
		v := "r-" + strconv.Itoa(i)
		batch = append(batch, kgo.StringRecord(v))
		if len(batch) == 50 {
			if err := prod.ProduceSync(ctxTimeout(t, 30*time.Second), batch...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			for _, r := range batch {
				h.Sent(string(r.Value))
			}
			batch = nil
		}
	}
	td, err := adm.ListTopics(ctxTimeout(t, 10*time.Second), topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("topic id: %v %v", err, td[topic].Err)
	}
	topicID := [16]byte(td[topic].ID)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 3 {
		m := newRawShareMember(t, nodes, topic, group, fmt.Sprintf("member-%d-%d", i, time.Now().UnixNano()%1e9), topicID)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				// Paced, so the kill lands mid-stream whatever the speed.
				time.Sleep(20 * time.Millisecond)
				got, err := m.fetch(ctx, 10)
				if err != nil || len(got) == 0 {
					time.Sleep(30 * time.Millisecond)
					continue
				}
				offs := sortedOffsets(got)
				var ke *kerr.Error
				switch err := m.accept(ctx, offs); {
				case err == nil:
					for _, o := range offs {
						h.Confirmed(m.member, got[o])
					}
				case errors.As(err, &ke):
					// Refused: not taken (a lapsed lock, a new leader).
				default:
					for _, o := range offs {
						h.Unsure(got[o])
					}
				}
			}
		}()
	}

	// Mid-stream: kill -9 the leader once a third is acknowledged.
	deadline := time.Now().Add(30 * time.Second)
	for h.ConfirmedCount() < total/3 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if h.ConfirmedCount() < total/3 {
		t.Fatalf("only %d records confirmed before the kill", h.ConfirmedCount())
	}
	leader := waitLeader(t, nodes, topic, 0, -1, 10*time.Second)
	atKill := h.ConfirmedCount()
	leader.Kill()
	t.Logf("killed leader %d with %d of %d confirmed", leader.ID, atKill, total)
	waitLeader(t, nodes, topic, 0, int32(leader.ID), 30*time.Second)
	for h.ConfirmedCount() < total && ctx.Err() == nil {
		if h.ConfirmedCount() >= total-25 && h.ConfirmedCount() > atKill {
			break // the rest may sit under lapsing locks; the drain takes them
		}
		time.Sleep(50 * time.Millisecond)
	}
	after := h.ConfirmedCount()
	cancel()
	wg.Wait()
	if after <= atKill {
		t.Fatalf("no acknowledgement confirmed after the failover (%d before, %d after)", atKill, after)
	}

	// The drain: past every lock, whatever was not acknowledged comes.
	live := []*Node{}
	for _, n := range nodes {
		if n.Running() {
			live = append(live, n)
		}
	}
	drainer := newRawShareMember(t, live, topic, group, "drain", topicID)
	quietSince := time.Now()
	dctx := ctxTimeout(t, 30*time.Second)
	for time.Since(quietSince) < 4500*time.Millisecond && dctx.Err() == nil {
		got, err := drainer.fetch(dctx, 200)
		if err != nil || len(got) == 0 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		for _, v := range got {
			h.Drained(v)
		}
		quietSince = time.Now()
	}
	r := h.CheckShare()
	t.Logf("share history: %s", r)
	if !r.OK() {
		t.Fatalf("share history violated: %s", r)
	}
	if r.Confirmed+r.Drained+r.Unsure < total {
		t.Fatalf("accounted for %d records of %d", r.Confirmed+r.Drained+r.Unsure, total)
	}
}

// TestShareGroupStateSurvivesRestart: kill -9 of every node (here the one)
// and a restart lose no acknowledgement: the drain afterwards is given
// exactly the records never acknowledged, with their delivery counts kept.
func TestShareGroupStateSurvivesRestart(t *testing.T) {
	n := StartNode(t)
	topic, group := uniqueTopic("sharerestart"), uniqueTopic("sg")
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	setShareConfigs(t, n.KafkaAddr, group, "share.auto.offset.reset", "earliest")
	const total = 100
	produceNumbered(t, n.KafkaAddr, topic, total)
	adm := kadm.NewClient(franzClient(t, n.KafkaAddr))
	td, err := adm.ListTopics(ctxTimeout(t, 10*time.Second), topic)
	if err != nil || td[topic].Err != nil {
		t.Fatalf("topic id: %v %v", err, td[topic].Err)
	}
	topicID := [16]byte(td[topic].ID)

	m := newRawShareMember(t, []*Node{n}, topic, group, "before", topicID)
	ctx := ctxTimeout(t, 30*time.Second)
	got, err := m.fetch(ctx, 60)
	if err != nil || len(got) != 60 {
		t.Fatalf("fetch: %d records, %v", len(got), err)
	}
	var acked []int64
	for o := range got {
		if o%2 == 0 {
			acked = append(acked, o)
		}
	}
	if err := m.accept(ctx, sortedOffsets(map[int64]string(func() map[int64]string {
		out := map[int64]string{}
		for _, o := range acked {
			out[o] = ""
		}
		return out
	}()))); err != nil {
		t.Fatalf("accept: %v", err)
	}
	m.cl.Close()
	n.Kill()
	n.Start()

	d := newRawShareMember(t, []*Node{n}, topic, group, "after", topicID)
	seen := map[int64]bool{}
	dctx := ctxTimeout(t, 30*time.Second)
	for len(seen) < total-len(acked) && dctx.Err() == nil {
		got, err := d.fetch(dctx, 200)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for o := range got {
			if seen[o] {
				t.Errorf("offset %d delivered twice to the drain", o)
			}
			seen[o] = true
		}
	}
	for _, o := range acked {
		if seen[o] {
			t.Errorf("offset %d, acknowledged before the restart, redelivered", o)
		}
	}
	if len(seen) != total-len(acked) {
		t.Fatalf("drain got %d records, want the %d never acknowledged", len(seen), total-len(acked))
	}
}
