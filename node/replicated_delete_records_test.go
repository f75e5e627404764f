package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// TestReplicatedDeleteRecords: DeleteRecords on a partition of replication
// factor 3 moves its start on every replica, so after its leader stops the
// new leader starts at the same offset and consumers from the start read
// nothing below it.
func TestReplicatedDeleteRecords(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "replicated-delete"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(nodes)...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := testCtx(t)
	for i := range 10 { // three records a batch
		rs := []*kgo.Record{{Value: []byte(fmt.Sprint(i, "a"))}, {Value: []byte(fmt.Sprint(i, "b"))}, {Value: []byte(fmt.Sprint(i, "c"))}}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	var at kadm.Offsets
	at.Add(kadm.Offset{Topic: topic, Partition: 0, At: 4})
	dr, err := adm.DeleteRecords(ctx, at)
	if r, _ := dr.Lookup(topic, 0); err != nil || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete records before 4: %v %+v", err, r)
	}
	for _, n := range nodes {
		if s := n.parts.Get(topic, 0).Replica.LogStartOffset(); s != 4 {
			retry.Run(t, 10*time.Second, func() error {
				if s := n.parts.Get(topic, 0).Replica.LogStartOffset(); s != 4 {
					return fmt.Errorf("node %d's replica starts at %d", n.NodeID(), s)
				}
				return nil
			})
		}
	}
	lead, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	stopNode(t, lead)
	var rest []*Node
	for _, n := range nodes {
		if n != lead {
			rest = append(rest, n)
		}
	}
	rcl, err := kgo.NewClient(kgo.SeedBrokers(seedsOf(rest)...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer rcl.Close()
	retry.Run(t, 30*time.Second, func() error {
		so, err := kadm.NewClient(rcl).ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		if o, _ := so.Lookup(topic, 0); o.Err != nil || o.Offset != 4 {
			return fmt.Errorf("start offset after failover: %+v", o)
		}
		return nil
	})
	fs := rcl.PollRecords(ctx, 1)
	if errs := fs.Errors(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 4 || string(recs[0].Value) != "1b" {
		t.Fatalf("first record from the start after failover: %+v", recs)
	}
}
