package integration

// The new admin APIs through franz-go against a real node: kadm where it
// has a call for the API, kgo's Request with the kmsg request otherwise
// (DescribeCluster, DescribeTopicPartitions, DescribeConfigs' read-only
// flag, which kadm drops). Each checks the API's effect, not only its
// answer: deleted records are out of range and stay so across kill -9,
// altered configs change what produce accepts, and so on.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// segmentBases lists the base offsets of a partition directory's segments.
func segmentBases(t testing.TB, dir string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			b, err := strconv.ParseInt(name, 10, 64)
			if err == nil {
				bases = append(bases, b)
			}
		}
	}
	slices.Sort(bases)
	return bases
}

// fetchError is the error code of a raw Fetch at offset from broker 1. The
// client sends its newest version whatever req.Version says, so the topic
// goes by id (Fetch v13+) as well as by name.
func fetchError(t testing.TB, cl *kgo.Client, topic string, partition int32, offset int64) int16 {
	t.Helper()
	topics, err := kadm.NewClient(cl).ListTopics(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, offset, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl.Broker(1))
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func TestAdminDeleteRecordsFranz(t *testing.T) {
	n := StartNode(t)
	const topic = "delrec"
	adm := kadm.NewClient(franzClient(t, n.KafkaAddr))
	ctx := ctxTimeout(t, 90*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": kmsg.StringPtr("1024")}, topic); err != nil {
		t.Fatal(err)
	}
	cl := franzClient(t, n.KafkaAddr, kgo.DefaultProduceTopic(topic))
	for i := range 50 { // one 100-byte record per batch: six batches a segment
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("%-100d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(n.Dir, topic+"-0")
	if bases := segmentBases(t, dir); len(bases) < 5 || bases[1] > 30 {
		t.Fatalf("segments %v: want several below offset 30 to begin with", bases)
	}

	var os_ kadm.Offsets
	os_.Add(kadm.Offset{Topic: topic, Partition: 0, At: 30})
	resps, err := adm.DeleteRecords(ctx, os_)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resps.Lookup(topic, 0); r.Err != nil || r.LowWatermark != 30 {
		t.Fatalf("delete records before 30: low watermark %d, %v", r.LowWatermark, r.Err)
	}
	if code := fetchError(t, cl, topic, 0, 10); code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch at 10 below the start: %s, want OFFSET_OUT_OF_RANGE", errName(code))
	}
	if code := fetchError(t, cl, topic, 0, 30); code != 0 {
		t.Fatalf("fetch at 30: %s", errName(code))
	}
	// Retention ran with the delete: no segment wholly below 30 is left.
	if bases := segmentBases(t, dir); bases[0] > 30 || (len(bases) > 1 && bases[1] <= 30) {
		t.Fatalf("segments after delete before 30: %v, want the first to hold offset 30", bases)
	}

	// The start is durable: a crash right after the answer keeps it.
	n.Kill()
	n.Start()
	starts, err := kadm.NewClient(franzClient(t, n.KafkaAddr)).ListStartOffsets(ctxTimeout(t, 20*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup(topic, 0); s.Offset != 30 {
		t.Fatalf("start offset after kill -9 and restart: %d, want 30", s.Offset)
	}
	recs := franzConsume(t, n.KafkaAddr, topic, 0, kgo.NewOffset().AtStart(), 20)
	if recs[0].Offset != 30 || strings.TrimSpace(string(recs[0].Value)) != "30" {
		t.Fatalf("first record read from the start after restart: offset %d value %q, want 30", recs[0].Offset, recs[0].Value)
	}

	// -1 is the high watermark; past it is out of range.
	os_ = kadm.Offsets{}
	os_.Add(kadm.Offset{Topic: topic, Partition: 0, At: -1})
	resps, err = kadm.NewClient(franzClient(t, n.KafkaAddr)).DeleteRecords(ctxTimeout(t, 20*time.Second), os_)
	if r, _ := resps.Lookup(topic, 0); err != nil || r.Err != nil || r.LowWatermark != 50 {
		t.Fatalf("delete records before -1: %+v, %v; want low watermark 50", r, err)
	}
	var commit kadm.Offsets // makes __consumer_offsets
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 40, LeaderEpoch: -1})
	if _, err := kadm.NewClient(franzClient(t, n.KafkaAddr)).CommitOffsets(ctxTimeout(t, 20*time.Second), "delrec-group", commit); err != nil {
		t.Fatal(err)
	}
	os_ = kadm.Offsets{}
	os_.Add(kadm.Offset{Topic: "__consumer_offsets", Partition: 0, At: 0})
	resps, _ = kadm.NewClient(franzClient(t, n.KafkaAddr)).DeleteRecords(ctxTimeout(t, 20*time.Second), os_)
	if r, _ := resps.Lookup("__consumer_offsets", 0); !errors.Is(r.Err, kerr.InvalidTopicException) {
		t.Fatalf("delete records of __consumer_offsets: %+v, want INVALID_TOPIC_EXCEPTION", r)
	}
	os_ = kadm.Offsets{}
	os_.Add(kadm.Offset{Topic: topic, Partition: 0, At: 51})
	resps, _ = kadm.NewClient(franzClient(t, n.KafkaAddr)).DeleteRecords(ctxTimeout(t, 20*time.Second), os_)
	if r, _ := resps.Lookup(topic, 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete records before 51 (past the end): %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
}

// topicConfigSource is a topic config's value and source as DescribeConfigs
// gives them.
func topicConfigSource(t testing.TB, adm *kadm.Client, topic, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxTimeout(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c.MaybeValue(), c.Source
		}
	}
	t.Fatalf("%s has no config %s", topic, key)
	return "", 0
}

func TestAdminAlterConfigsFranz(t *testing.T) {
	n := StartNode(t)
	const topic = "alter"
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	cl := franzClient(t, n.KafkaAddr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, 60*time.Second)
	big := &kgo.Record{Value: []byte(strings.Repeat("x", 5000))}

	// IncrementalAlterConfigs: the new limit applies to the open partition.
	resps, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: kmsg.StringPtr("2000")}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("incremental alter: %v %+v", err, resps)
	}
	if v, src := topicConfigSource(t, adm, topic, "max.message.bytes"); v != "2000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("max.message.bytes = %s (%s)", v, src)
	}
	if err := cl.ProduceSync(ctx, big).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("5000-byte record under max.message.bytes=2000: %v, want MESSAGE_TOO_LARGE", err)
	}
	// APPEND to the list config.
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: kmsg.StringPtr("compact")}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("append cleanup.policy: %v %+v", err, resps)
	}
	if v, _ := topicConfigSource(t, adm, topic, "cleanup.policy"); v != "compact,delete" {
		t.Fatalf("cleanup.policy after APPEND compact: %q, want compact,delete", v)
	}
	// Unknown configs are refused, never dropped, and nothing changes.
	resps, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("1")},
		{Op: kadm.SetConfig, Name: "no.such.config", Value: kmsg.StringPtr("1")},
	}, topic)
	if err != nil || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
		t.Fatalf("incremental alter with an unknown key: %v %+v, want INVALID_CONFIG", err, resps)
	}
	if _, src := topicConfigSource(t, adm, topic, "retention.ms"); src != kmsg.ConfigSourceDefaultConfig {
		t.Fatal("a refused alteration changed retention.ms")
	}
	// validate_only changes nothing.
	resps, err = adm.ValidateAlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("7")}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("validate-only: %v %+v", err, resps)
	}
	if _, src := topicConfigSource(t, adm, topic, "retention.ms"); src != kmsg.ConfigSourceDefaultConfig {
		t.Fatal("validate_only changed retention.ms")
	}

	// AlterConfigs replaces the whole set: max.message.bytes and
	// cleanup.policy go back to the defaults.
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}, topic)
	if err != nil || resps[0].Err != nil {
		t.Fatalf("alter configs: %v %+v", err, resps)
	}
	if v, src := topicConfigSource(t, adm, topic, "retention.ms"); v != "3600000" || src != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms = %s (%s)", v, src)
	}
	if _, src := topicConfigSource(t, adm, topic, "max.message.bytes"); src != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("max.message.bytes source %s after AlterConfigs without it", src)
	}
	if err := cl.ProduceSync(ctx, big).FirstErr(); err != nil {
		t.Fatalf("5000-byte record after the limit went back to the default: %v", err)
	}
	resps, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "bogus", Value: kmsg.StringPtr("1")}}, topic)
	if err != nil || !errors.Is(resps[0].Err, kerr.InvalidConfig) {
		t.Fatalf("alter configs with an unknown key: %v %+v, want INVALID_CONFIG", err, resps)
	}

	// The configs are in the catalog: a restart keeps them.
	n.Stop()
	n.Start()
	adm = kadm.NewClient(franzClient(t, n.KafkaAddr))
	if v, _ := topicConfigSource(t, adm, topic, "retention.ms"); v != "3600000" {
		t.Fatalf("retention.ms after restart: %s", v)
	}

	// Broker settings are read-only.
	bresps, err := adm.AlterBrokerConfigs(ctxTimeout(t, 10*time.Second), []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "num.partitions", Value: kmsg.StringPtr("4")}}, 1)
	if err != nil || len(bresps) != 1 || !errors.Is(bresps[0].Err, kerr.InvalidConfig) {
		t.Fatalf("alter broker config: %v %+v, want INVALID_CONFIG", err, bresps)
	}
}

func TestAdminDescribeBrokerConfigsFranz(t *testing.T) {
	n := StartNode(t, WithArgs("--default-partitions", "3"))
	cl := franzClient(t, n.KafkaAddr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe broker configs: %v %+v", err, resp)
	}
	byName := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		byName[c.Name] = c
		if !c.ReadOnly {
			t.Errorf("broker config %s is not read-only, but no broker config can change live", c.Name)
		}
	}
	np := byName["num.partitions"]
	if np.Value == nil || *np.Value != "3" || np.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("num.partitions set by --default-partitions 3: %+v", np)
	}
	if len(np.ConfigSynonyms) != 2 || *np.ConfigSynonyms[1].Value != "1" || np.ConfigSynonyms[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("num.partitions synonyms %+v, want the static value then the default 1", np.ConfigSynonyms)
	}
	lr := byName["log.retention.ms"]
	if lr.Value == nil || *lr.Value != "604800000" || lr.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("log.retention.ms (not set): %+v", lr)
	}
	for _, want := range []string{"broker.id", "log.dirs", "message.max.bytes", "log.segment.bytes", "offsets.topic.num.partitions"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("broker config %s not described", want)
		}
	}
	// kadm's view: the same sources.
	rcs, err := kadm.NewClient(cl).DescribeBrokerConfigs(ctxTimeout(t, 10*time.Second), 1)
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := rcs.On("1", nil); err != nil || rc.Err != nil || len(rc.Configs) != len(byName) {
		t.Fatalf("kadm describe broker configs: %v %+v", err, rc)
	}
}

func TestAdminDescribeClusterAndTopicPartitionsFranz(t *testing.T) {
	n := StartNode(t)
	franzCreateTopic(t, n.KafkaAddr, "dtp-a", 5)
	franzCreateTopic(t, n.KafkaAddr, "dtp-b", 1)
	cl := franzClient(t, n.KafkaAddr)
	ctx := ctxTimeout(t, 30*time.Second)

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	dcr, err := dc.RequestWith(ctx, cl)
	if err != nil || dcr.ErrorCode != 0 {
		t.Fatalf("describe cluster: %v %+v", err, dcr)
	}
	meta, err := kadm.NewClient(cl).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dcr.ClusterID != meta.Cluster || dcr.ControllerID != 1 || len(dcr.Brokers) != 1 ||
		dcr.Brokers[0].NodeID != 1 || hostPort(dcr.Brokers[0].Host, dcr.Brokers[0].Port) != n.KafkaAddr {
		t.Fatalf("describe cluster %+v, metadata cluster %q, node at %s", dcr, meta.Cluster, n.KafkaAddr)
	}
	if dcr.ClusterAuthorizedOperations <= 0 {
		t.Errorf("cluster authorized operations %d when asked for", dcr.ClusterAuthorizedOperations)
	}
	dc = kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = 2
	if dcr, err := dc.RequestWith(ctx, cl); err != nil || dcr.ErrorCode != kerr.MismatchedEndpointType.Code {
		t.Fatalf("describe cluster for controllers: %v %+v, want MISMATCHED_ENDPOINT_TYPE", err, dcr)
	}

	// Pages of two partitions over both topics and an unknown one.
	var got []string
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatalf("more pages than partitions: %v", got)
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range []string{"dtp-b", "dtp-a", "dtp-none"} {
			rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		req.ResponsePartitionLimit = 2
		req.Cursor = cursor
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range resp.Topics {
			if st.ErrorCode != 0 {
				got = append(got, *st.Topic+":"+kerr.ErrorForCode(st.ErrorCode).(*kerr.Error).Message)
				continue
			}
			for _, p := range st.Partitions {
				if p.LeaderID != 1 || !slices.Equal(p.Replicas, []int32{1}) || !slices.Equal(p.ISR, []int32{1}) {
					t.Errorf("%s/%d: %+v", *st.Topic, p.Partition, p)
				}
				got = append(got, fmt.Sprintf("%s/%d", *st.Topic, p.Partition))
			}
		}
		if resp.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
	want := []string{"dtp-a/0", "dtp-a/1", "dtp-a/2", "dtp-a/3", "dtp-a/4", "dtp-b/0", "dtp-none:UNKNOWN_TOPIC_OR_PARTITION"}
	if !slices.Equal(got, want) {
		t.Fatalf("paged partitions %v, want %v", got, want)
	}
}

func hostPort(host string, port int32) string { return host + ":" + strconv.Itoa(int(port)) }

func TestAdminLogDirsProducersOffsetDeleteFranz(t *testing.T) {
	n := StartNode(t)
	const topic = "dirs"
	franzCreateTopic(t, n.KafkaAddr, topic, 2)
	cl := franzClient(t, n.KafkaAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	ctx := ctxTimeout(t, 60*time.Second)
	for i := range 7 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// DescribeLogDirs: the data dir, and each partition's size on disk.
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[1]
	abs, _ := filepath.Abs(n.Dir)
	p0, ok := dirs.Lookup(abs, topic, 0)
	if !ok {
		t.Fatalf("log dirs of broker 1 do not hold %s/0 in %s: %+v", topic, abs, dirs)
	}
	var onDisk int64
	for _, b := range segmentBases(t, filepath.Join(n.Dir, topic+"-0")) {
		st, err := os.Stat(filepath.Join(n.Dir, topic+"-0", fmt.Sprintf("%020d.log", b)))
		if err != nil {
			t.Fatal(err)
		}
		onDisk += st.Size()
	}
	if p0.Size != onDisk || p0.Size == 0 || p0.OffsetLag != 0 {
		t.Errorf("%s/0: size %d (segments on disk %d), lag %d", topic, p0.Size, onDisk, p0.OffsetLag)
	}
	if p1, ok := dirs.Lookup(abs, topic, 1); !ok || p1.Size != 0 {
		t.Errorf("%s/1 (empty): %+v %v", topic, p1, ok)
	}
	if d := dirs[abs]; d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
		t.Errorf("dir totals %d usable %d", d.TotalBytes, d.UsableBytes)
	}

	// DescribeProducers: franz-go produces idempotently; seven batches.
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prods, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	list := prods.SortedProducers()
	if len(list) != 1 || list[0].ProducerID != id || list[0].ProducerEpoch != epoch || list[0].LastSequence != 6 || list[0].Partition != 0 || list[0].LastTimestamp <= 0 {
		t.Fatalf("producers %+v, want id %d epoch %d last sequence 6 on partition 0", list, id, epoch)
	}

	// OffsetDelete: an empty group loses the offsets named, keeps the rest.
	var commit kadm.Offsets
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 3, LeaderEpoch: -1})
	commit.Add(kadm.Offset{Topic: topic, Partition: 1, At: 0, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "od-group", commit); err != nil {
		t.Fatal(err)
	}
	dresps, err := adm.DeleteOffsets(ctx, "od-group", kadm.TopicsSet{topic: {0: {}}})
	if err != nil || dresps.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, dresps.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, "od-group")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup(topic, 0); ok {
		t.Errorf("offset of %s/0 still committed after OffsetDelete", topic)
	}
	if o, ok := fetched.Lookup(topic, 1); !ok || o.At != 0 {
		t.Errorf("offset of %s/1 lost: %+v %v", topic, o, ok)
	}
	if _, err := adm.DeleteOffsets(ctx, "no-such-group", kadm.TopicsSet{topic: {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("delete offsets of an unknown group: %v, want GROUP_ID_NOT_FOUND", err)
	}

	// A consumer group member subscribed to the topic keeps its offsets.
	member := franzClient(t, n.KafkaAddr, kgo.ConsumerGroup("od-live"), kgo.ConsumeTopics(topic))
	retry.Run(t, 30*time.Second, func() error {
		member.PollRecords(ctxTimeout(t, 500*time.Millisecond), 10) // joins the group
		groups, err := adm.DescribeGroups(ctx, "od-live")
		if err != nil {
			return err
		}
		if g := groups["od-live"]; g.State != "Stable" {
			return fmt.Errorf("group state %q", g.State)
		}
		return nil
	})
	dresps, err = adm.DeleteOffsets(ctx, "od-live", kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := dresps.Lookup(topic, 0); !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Fatalf("delete offsets of a topic a live member consumes: %v, want GROUP_SUBSCRIBED_TO_TOPIC", e)
	}
}
