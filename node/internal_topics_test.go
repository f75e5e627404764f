package node

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/group"
)

// metadataTopics asks for every topic and returns them by name.
func metadataTopics(t *testing.T, cl *kgo.Client, topics ...string) map[string]kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	out := make(map[string]kmsg.MetadataResponseTopic)
	for _, st := range resp.Topics {
		if st.Topic != nil {
			out[*st.Topic] = st
		}
	}
	return out
}

// commitOne makes the coordinator create __consumer_offsets and stores a
// commit in it.
func commitOne(t *testing.T, adm *kadm.Client) {
	t.Helper()
	createTopic(t, adm, "plain", 1, nil)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "plain", Partition: 0, At: 42, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(testCtx(t), "keeper", offs); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func TestConsumerOffsetsIsInternalInMetadata(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	cl := newClient(t, n)
	commitOne(t, kadm.NewClient(cl))
	all := metadataTopics(t, cl) // a null list: every topic
	if st, ok := all[group.TopicName]; !ok || !st.IsInternal {
		t.Fatalf("%s in metadata: %v, internal %v", group.TopicName, ok, st.IsInternal)
	}
	if st, ok := all["plain"]; !ok || st.IsInternal {
		t.Fatalf("plain in metadata: %v, internal %v", ok, st.IsInternal)
	}
	// kadm, like Kafka's admin client, leaves internal topics out of a
	// plain listing.
	listed, err := kadm.NewClient(cl).ListTopics(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if listed.Has(group.TopicName) || !listed.Has("plain") {
		t.Fatalf("listed topics: %v", listed.Names())
	}
}

func TestProduceToConsumerOffsetsRefused(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	cl := newClient(t, n, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1))
	commitOne(t, kadm.NewClient(cl))
	groups, _ := n.coords.Groups.Current() // made by the commit
	lp := n.parts.Get(group.TopicName, groups.Partition("keeper"))
	if lp == nil {
		t.Fatal("the group's offsets partition is not open")
	}
	before := lp.Replica.LogEndOffset()
	err := cl.ProduceSync(testCtx(t), &kgo.Record{Topic: group.TopicName, Partition: lp.Index, Value: []byte("forged commit")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", group.TopicName, err)
	}
	if after := lp.Replica.LogEndOffset(); after != before {
		t.Fatalf("%s-%d grew from %d to %d", group.TopicName, lp.Index, before, after)
	}
	// The group's commit is intact.
	offs, err := kadm.NewClient(cl).FetchOffsets(testCtx(t), "keeper")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("plain", 0); !ok || o.At != 42 {
		t.Fatalf("commit after the refused produce: %+v %v", o, ok)
	}
}

func TestDeleteConsumerOffsetsRefused(t *testing.T) {
	n := startNode(t, groupTestConfig(t, t.TempDir()))
	cl := newClient(t, n)
	adm := kadm.NewClient(cl)
	commitOne(t, adm)
	resp, err := adm.DeleteTopics(testCtx(t), group.TopicName, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if r := resp[group.TopicName]; !errors.Is(r.Err, kerr.InvalidTopicException) {
		t.Fatalf("delete %s: %v, want INVALID_TOPIC_EXCEPTION", group.TopicName, r.Err)
	}
	if r := resp["plain"]; r.Err != nil {
		t.Fatalf("delete plain: %v", r.Err)
	}
	if _, ok := n.catalog.Topic(group.TopicName); !ok {
		t.Fatalf("%s left the catalog", group.TopicName)
	}
	offs, err := adm.FetchOffsets(testCtx(t), "keeper")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("plain", 0); !ok || o.At != 42 {
		t.Fatalf("commit after the refused delete: %+v %v", o, ok)
	}
}

// TestMetadataAutoCreatesConsumerOffsetsAsTheCoordinator: a client asking
// for __consumer_offsets before any group exists must not get an ordinary
// topic (DefaultPartitions, default retention) that the coordinator would
// then have to live with.
func TestMetadataAutoCreatesConsumerOffsetsAsTheCoordinator(t *testing.T) {
	cfg := groupTestConfig(t, t.TempDir())
	cfg.DefaultPartitions = 2
	n := startNode(t, cfg)
	cl := newClient(t, n)
	st := metadataTopics(t, cl, group.TopicName)[group.TopicName]
	if st.ErrorCode != 0 || !st.IsInternal || len(st.Partitions) != int(cfg.Groups.OffsetsTopicPartitions) {
		t.Fatalf("%s: error %d, internal %v, %d partitions, want %d", group.TopicName, st.ErrorCode, st.IsInternal, len(st.Partitions), cfg.Groups.OffsetsTopicPartitions)
	}
	spec, ok := n.catalog.Topic(group.TopicName)
	if !ok || spec.Configs["retention.ms"] != "-1" || spec.Configs["retention.bytes"] != "-1" {
		t.Fatalf("%s created with configs %v (%v)", group.TopicName, spec.Configs, ok)
	}
}
