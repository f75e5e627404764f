package integration

// Share groups (KIP-932) against real spool processes with franz-go's
// share consumer: records split among members, redelivery after a lapsed
// lock, archiving at the delivery limit.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/internal/retry"
)

// setShareConfigs sets group configs with IncrementalAlterConfigs on the
// GROUP resource, and reads them back with DescribeConfigs.
func setShareConfigs(t testing.TB, addr, group string, kvs ...string) {
	t.Helper()
	cl := franzClient(t, addr)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxTimeout(t, 20*time.Second), cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	if e := kerr.ErrorForCode(resp.Resources[0].ErrorCode); e != nil {
		t.Fatalf("IncrementalAlterConfigs %s: %v", group, e)
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	dreq.Resources = append(dreq.Resources, dres)
	dresp, err := dreq.RequestWith(ctxTimeout(t, 20*time.Second), cl)
	if err != nil || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs %s: %v %v", group, err, dresp)
	}
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		if c.Value != nil {
			got[c.Name] = *c.Value
		}
	}
	for i := 0; i+1 < len(kvs); i += 2 {
		if got[kvs[i]] != kvs[i+1] {
			t.Fatalf("%s: %s is %q after setting %q", group, kvs[i], got[kvs[i]], kvs[i+1])
		}
	}
}

func produceNumbered(t testing.TB, addr, topic string, n int) {
	t.Helper()
	cl := franzClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, kgo.StringRecord(strconv.Itoa(i)))
		if len(recs) == 50 || i == n-1 {
			if err := cl.ProduceSync(ctxTimeout(t, 30*time.Second), recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			recs = nil
		}
	}
}

func shareConsumer(t testing.TB, addr, topic, group string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return franzClient(t, addr, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.FetchMaxWait(500 * time.Millisecond)}, opts...)...)
}

// TestShareGroupFiveConsumersSplitRecords: five members of one share group
// on a one-partition topic each get records, and together see every one,
// each accepted exactly once.
func TestShareGroupFiveConsumersSplitRecords(t *testing.T) {
	n := StartNode(t)
	topic, group := uniqueTopic("share5"), uniqueTopic("sg")
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	setShareConfigs(t, n.KafkaAddr, group, "share.auto.offset.reset", "earliest")
	const total = 2000
	produceNumbered(t, n.KafkaAddr, topic, total)

	var (
		mu     sync.Mutex
		seen   = map[string]int{}
		byCons [5]int
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 5 {
		cl := shareConsumer(t, n.KafkaAddr, topic, group, kgo.ShareMaxRecords(20), kgo.ShareMaxRecordsStrict())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				recs := fs.Records()
				for _, r := range recs {
					r.Ack(kgo.AckAccept)
				}
				if len(recs) > 0 {
					if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
						t.Errorf("consumer %d: flush acks: %v", i, err)
					}
				}
				mu.Lock()
				for _, r := range recs {
					seen[string(r.Value)]++
					byCons[i]++
				}
				done := len(seen) == total
				mu.Unlock()
				if done {
					cancel()
				}
				time.Sleep(2 * time.Millisecond) // let the others in
			}
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != total {
		t.Fatalf("saw %d of %d records", len(seen), total)
	}
	for i, c := range byCons {
		if c == 0 {
			t.Errorf("consumer %d got no records (%v)", i, byCons)
		}
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("record %s delivered %d times with every delivery accepted", k, c)
		}
	}
	t.Logf("records per consumer: %v", byCons)

	// spool group list shows the share group, as ListGroups' type share.
	out, err := Spool(t, "", "group", "list", "--brokers", n.KafkaAddr)
	if err != nil || !strings.Contains(out, group) || !strings.Contains(out, "share") {
		t.Fatalf("spool group list: %v\n%s", err, out)
	}
	// spool group describe shows its members and the partition's start
	// offset: every record accepted, so the SPSO is the log end.
	out, err = Spool(t, "", "group", "describe", group, "--brokers", n.KafkaAddr, "-o", "json")
	if err != nil {
		t.Fatalf("spool group describe: %v\n%s", err, out)
	}
	var described []struct {
		ProtocolType string `json:"protocol_type"`
		Members      []any  `json:"members"`
		Offsets      []struct {
			Committed int64 `json:"committed"`
			Lag       int64 `json:"lag"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal([]byte(out), &described); err != nil || len(described) != 1 {
		t.Fatalf("spool group describe -o json: %v\n%s", err, out)
	}
	if d := described[0]; d.ProtocolType != "share" || len(d.Members) != 5 || len(d.Offsets) != 1 || d.Offsets[0].Committed != total || d.Offsets[0].Lag != 0 {
		t.Fatalf("spool group describe: %+v\n%s", d, out)
	}
	checkShareGroupClassicAPIs(t, n.KafkaAddr, group)
}

// checkShareGroupClassicAPIs: the classic group APIs answer for a share
// group as Kafka 4.2's group coordinator does. ListGroups lists it with
// type and protocol type "share"; DescribeGroups (v6) does not describe
// it: Dead, GROUP_ID_NOT_FOUND, "Group G is not a classic group."
// (ShareGroupDescribe does).
func checkShareGroupClassicAPIs(t *testing.T, addr, group string) {
	t.Helper()
	cl := franzClient(t, addr)
	defer cl.Close()
	ctx := ctxTimeout(t, 15*time.Second)
	list, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil || list.ErrorCode != 0 {
		t.Fatalf("ListGroups: %v %+v", err, list)
	}
	i := slices.IndexFunc(list.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == group })
	if i < 0 || list.Groups[i].GroupType != "share" || list.Groups[i].ProtocolType != "share" {
		t.Fatalf("ListGroups: %s not listed as a share group: %+v", group, list.Groups)
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	desc, err := req.RequestWith(ctx, cl)
	if err != nil || len(desc.Groups) != 1 {
		t.Fatalf("DescribeGroups: %v %+v", err, desc)
	}
	g := desc.Groups[0]
	want := "Group " + group + " is not a classic group."
	if g.ErrorCode != kerr.GroupIDNotFound.Code || g.State != "Dead" || g.ErrorMessage == nil || *g.ErrorMessage != want || len(g.Members) != 0 {
		t.Fatalf("DescribeGroups v%d of a share group: %+v, want Dead, GROUP_ID_NOT_FOUND, %q", desc.Version, g, want)
	}
}

// shareJoinAndAcquire is a member that joins, acquires up to max records
// and vanishes without acknowledging or closing its session, as a
// consumer killed mid-batch does: the raw requests of a share consumer.
func shareJoinAndAcquire(t testing.TB, addr, topic, group string, max int32) []int64 {
	t.Helper()
	cl := franzClient(t, addr)
	defer cl.Close()
	ctx := ctxTimeout(t, 30*time.Second)
	member := fmt.Sprintf("m%022d", time.Now().UnixNano())
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = group, member, []string{topic}
	var topicID [16]byte
	for {
		resp, err := hb.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 && resp.Assignment != nil && len(resp.Assignment.TopicPartitions) == 1 {
			topicID = resp.Assignment.TopicPartitions[0].TopicID
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("share heartbeat: %v %+v", err, resp)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var offsets []int64
	for epoch := int32(0); len(offsets) == 0; epoch++ {
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID, f.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
		f.MaxWaitMillis, f.MaxBytes, f.MaxRecords, f.BatchSize = 1000, 1<<20, max, max
		if epoch == 0 {
			ft := kmsg.NewShareFetchRequestTopic()
			ft.TopicID = topicID
			fp := kmsg.NewShareFetchRequestTopicPartition()
			ft.Partitions = append(ft.Partitions, fp)
			f.Topics = append(f.Topics, ft)
		}
		resp, err := f.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch: %v %+v", err, resp)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					t.Fatalf("share fetch partition: %v", kerr.ErrorForCode(rp.ErrorCode))
				}
				for _, a := range rp.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						offsets = append(offsets, o)
					}
				}
			}
		}
		if ctx.Err() != nil {
			t.Fatal("acquired nothing")
		}
	}
	return offsets
}

// TestShareGroupKilledConsumerRecordsRedelivered: a member that acquires
// records and vanishes holds them for the lock duration only; then they
// go to the others, their delivery count 2.
func TestShareGroupKilledConsumerRecordsRedelivered(t *testing.T) {
	n := StartNode(t)
	topic, group := uniqueTopic("sharekill"), uniqueTopic("sg")
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	setShareConfigs(t, n.KafkaAddr, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "2000")
	const total = 50
	produceNumbered(t, n.KafkaAddr, topic, total)

	held := shareJoinAndAcquire(t, n.KafkaAddr, topic, group, 10)
	if len(held) != 10 {
		t.Fatalf("the vanishing member acquired %d records, asked 10", len(held))
	}
	vanished := time.Now()
	checkShareInFlight(t, n.KafkaAddr, n.AdminAddr, group, 0, 10)

	cl := shareConsumer(t, n.KafkaAddr, topic, group)
	ctx := ctxTimeout(t, 30*time.Second)
	got := map[int64]int32{}
	var redeliveredAt time.Time
	for len(got) < total && ctx.Err() == nil {
		for _, r := range cl.PollFetches(ctx).Records() {
			got[r.Offset] = r.DeliveryCount()
			if r.DeliveryCount() > 1 && redeliveredAt.IsZero() {
				redeliveredAt = time.Now()
			}
		}
	}
	if len(got) != total {
		t.Fatalf("got %d of %d records", len(got), total)
	}
	for _, o := range held {
		if got[o] != 2 {
			t.Errorf("offset %d, held by the vanished member: delivery count %d, want 2", o, got[o])
		}
	}
	if wait := redeliveredAt.Sub(vanished); wait < 1500*time.Millisecond {
		t.Errorf("held records redelivered %v after the member vanished, before the 2 s lock could lapse", wait)
	}
	for o, c := range got {
		if !containsOffset(held, o) && c != 1 {
			t.Errorf("offset %d: delivery count %d, want 1", o, c)
		}
	}
}

// checkShareInFlight: spool group describe, given a node's admin address,
// shows the start offset and want records in flight on the group's one
// partition, as the partition's leader counts them (acquired, or available
// again once a lock lapsed: the same count either way), in JSON and in the
// table.
func checkShareInFlight(t *testing.T, kafka, admin, group string, start int64, want int) {
	t.Helper()
	out, err := Spool(t, "", "group", "describe", group, "--brokers", kafka, "--admin", admin, "-o", "json")
	if err != nil {
		t.Fatalf("spool group describe: %v\n%s", err, out)
	}
	var described []struct {
		Offsets []struct {
			Committed int64 `json:"committed"`
			InFlight  *int  `json:"in_flight"`
		} `json:"offsets"`
	}
	if err := json.Unmarshal([]byte(out), &described); err != nil || len(described) != 1 || len(described[0].Offsets) != 1 {
		t.Fatalf("spool group describe -o json: %v\n%s", err, out)
	}
	if o := described[0].Offsets[0]; o.Committed != start || o.InFlight == nil || *o.InFlight != want {
		t.Fatalf("spool group describe --admin %s: start offset %d, in flight %v, want %d and %d\n%s", admin, o.Committed, o.InFlight, start, want, out)
	}
	out, err = Spool(t, "", "group", "describe", group, "--brokers", kafka, "--admin", admin)
	if err != nil || !strings.Contains(out, "IN-FLIGHT") {
		t.Fatalf("spool group describe: %v\n%s", err, out)
	}
	t.Logf("spool group describe:\n%s", out)
}

func containsOffset(os []int64, o int64) bool {
	for _, x := range os {
		if x == o {
			return true
		}
	}
	return false
}

// TestShareGroupReleasedRecordsArchivedAtLimit: records released on every
// delivery come back until the delivery limit, then are archived and
// never delivered again.
func TestShareGroupReleasedRecordsArchivedAtLimit(t *testing.T) {
	n := StartNode(t)
	topic, group := uniqueTopic("sharelimit"), uniqueTopic("sg")
	franzCreateTopic(t, n.KafkaAddr, topic, 1)
	const limit = 3
	setShareConfigs(t, n.KafkaAddr, group, "share.auto.offset.reset", "earliest", "share.delivery.count.limit", strconv.Itoa(limit))
	const total = 20
	produceNumbered(t, n.KafkaAddr, topic, total)

	cl := shareConsumer(t, n.KafkaAddr, topic, group)
	deliveries := map[int64]int{}
	maxCount := map[int64]int32{}
	ctx := ctxTimeout(t, 30*time.Second)
	done := func() bool {
		for o := int64(0); o < total; o++ {
			if deliveries[o] < limit {
				return false
			}
		}
		return true
	}
	for !done() && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, r := range fs.Records() {
			deliveries[r.Offset]++
			maxCount[r.Offset] = max(maxCount[r.Offset], r.DeliveryCount())
			r.Ack(kgo.AckRelease)
		}
		if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
			t.Fatalf("flush acks: %v", err)
		}
	}
	if !done() {
		t.Fatalf("deliveries %v: not every record reached %d", deliveries, limit)
	}
	// Past the limit: nothing more, however long one waits (a second of
	// long polls is many fetches).
	quiet, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	for quiet.Err() == nil {
		for _, r := range cl.PollFetches(quiet).Records() {
			t.Errorf("offset %d delivered again (count %d) past the limit", r.Offset, r.DeliveryCount())
		}
	}
	for o := int64(0); o < total; o++ {
		if deliveries[o] != limit || maxCount[o] != limit {
			t.Errorf("offset %d: %d deliveries, count up to %d; want %d", o, deliveries[o], maxCount[o], limit)
		}
	}
	// The metrics say so too, once the node's periodic flush has run.
	retry.Run(t, 15*time.Second, func() error {
		m := scrapeMetrics(t, n)
		if m["spool_share_records_archived"] < total || m["spool_share_records_released"] < total*limit || m["spool_share_records_redelivered"] < total*(limit-1) {
			return fmt.Errorf("archived %v released %v redelivered %v", m["spool_share_records_archived"], m["spool_share_records_released"], m["spool_share_records_redelivered"])
		}
		return nil
	})
}

// TestShareGroupOffsetsAdminAcrossNodes: on three nodes, the share
// offsets admin APIs set a group's SPSO on the partition's leader
// wherever the coordinator is, Describe reads it back, consumers start
// there, and Delete removes it.
func TestShareGroupOffsetsAdminAcrossNodes(t *testing.T) {
	nodes := startCluster(t, 3)
	addr := nodes[0].KafkaAddr
	topic, group := uniqueTopic("shareadmin"), uniqueTopic("sg")
	franzCreateTopic(t, addr, topic, 1)
	waitTopicEverywhere(t, nodes, topic)
	produceNumbered(t, addr, topic, 20)
	cl := franzClient(t, addr, kgo.SeedBrokers(kafkaAddrs(nodes)...))
	ctx := ctxTimeout(t, 30*time.Second)

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	ap.StartOffset = 8
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	// The first group request of a new cluster creates __consumer_offsets
	// and may meet its coordinator loading (COORDINATOR_LOAD_IN_PROGRESS
	// or COORDINATOR_NOT_AVAILABLE, both retriable): asked again, as a
	// client does, until the coordinator answers.
	var ar *kmsg.AlterShareGroupOffsetsResponse
	var err error
	for {
		ar, err = alter.RequestWith(ctx, cl)
		if err == nil && (ar.ErrorCode == kerr.CoordinatorLoadInProgress.Code || ar.ErrorCode == kerr.CoordinatorNotAvailable.Code) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		break
	}
	if err != nil || ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %v %+v", err, ar)
	}
	describe := func() int64 {
		d := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		dg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		dg.GroupID = group
		d.Groups = append(d.Groups, dg)
		dr, err := d.RequestWith(ctx, cl)
		if err != nil || dr.Groups[0].ErrorCode != 0 || len(dr.Groups[0].Topics) != 1 {
			t.Fatalf("describe: %v %+v", err, dr)
		}
		return dr.Groups[0].Topics[0].Partitions[0].StartOffset
	}
	if got := describe(); got != 8 {
		t.Fatalf("describe after alter: %d, want 8", got)
	}
	sc := shareConsumer(t, addr, topic, group, kgo.SeedBrokers(kafkaAddrs(nodes)...))
	seen := map[int64]bool{}
	for len(seen) < 12 && ctx.Err() == nil {
		for _, r := range sc.PollFetches(ctx).Records() {
			if r.Offset < 8 {
				t.Errorf("offset %d delivered, below the altered start 8", r.Offset)
			}
			seen[r.Offset] = true
			r.Ack(kgo.AckAccept)
		}
	}
	if len(seen) != 12 {
		t.Fatalf("got %d of the 12 records from offset 8", len(seen))
	}
	if err := sc.FlushAcks(ctx); err != nil {
		t.Fatalf("flush acks: %v", err)
	}
	sc.Close()
	retry.Run(t, 15*time.Second, func() error {
		if got := describe(); got != 20 {
			return fmt.Errorf("SPSO %d after every record was accepted, want 20", got)
		}
		return nil
	})
	// The in-flight count comes from the partition's leader whichever
	// node's admin API the CLI is given: two of the three lead nothing,
	// and would answer an empty list themselves.
	for _, n := range nodes {
		checkShareInFlight(t, addr, n.AdminAddr, group, 20, 0)
	}
	// Once the members' sessions are gone (the consumer left), delete.
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = group
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = topic
	del.Topics = append(del.Topics, dt)
	retry.Run(t, 15*time.Second, func() error {
		dr, err := del.RequestWith(ctx, cl)
		if err != nil || dr.ErrorCode != 0 || dr.Topics[0].ErrorCode != 0 {
			return fmt.Errorf("delete: %v %+v", err, dr)
		}
		return nil
	})
	if got := describe(); got != -1 {
		t.Fatalf("describe after delete: %d, want -1", got)
	}
}

// TestSpoolConsumeShareGroup: spool consume --share-group reads as a share
// member and accepts what it prints: a second run of the same group gets
// nothing, while another group gets everything again.
func TestSpoolConsumeShareGroup(t *testing.T) {
	n := StartNode(t)
	topic, group := uniqueTopic("sharecli"), uniqueTopic("sg")
	franzCreateTopic(t, n.KafkaAddr, topic, 2)
	setShareConfigs(t, n.KafkaAddr, group, "share.auto.offset.reset", "earliest")
	produceNumbered(t, n.KafkaAddr, topic, 30)
	out, err := Spool(t, "", "consume", topic, "--share-group", group, "--brokers", n.KafkaAddr)
	if err != nil {
		t.Fatalf("spool consume --share-group: %v\n%s", err, out)
	}
	lines := strings.Fields(out)
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(lines) != 30 || len(seen) != 30 {
		t.Fatalf("first run printed %d lines (%d distinct), want 30:\n%s", len(lines), len(seen), out)
	}
	out, err = Spool(t, "", "consume", topic, "--share-group", group, "--brokers", n.KafkaAddr)
	if err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("second run of the group, everything accepted: %v\n%q", err, out)
	}
	if _, err := Spool(t, "", "consume", topic, "--share-group", group, "--partition", "0", "--brokers", n.KafkaAddr); err == nil {
		t.Fatal("--share-group with --partition accepted")
	}
}
