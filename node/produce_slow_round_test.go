package node

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/node/replica/raftlog"
)

// While an idempotent producer's batch waits for the leader's own Raft
// round (its disk write held here, as a slow disk would), the partition's
// producer state stays readable: DescribeProducers, which reads it under
// the partition's append lock, is answered within the stall, and a second
// idempotent producer's batch takes its place in the log's order behind the
// first instead of waiting for the lock. Both are acknowledged once the
// round goes on.
func TestIdempotentProduceDoesNotHoldTheAppendLockThroughTheRound(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic = "slow-round"
	startReplicatedTopic(t, nodes, topic, 1, 3)
	leader, err := partitionLeader(nodes, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	producer := func() *kgo.Client {
		return newClient(t, leader, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	a, b := producer(), producer()
	// Each producer's first batch makes the state know it.
	for _, cl := range []*kgo.Client{a, b} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("warm")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	dir := hosted.PartitionDir(leader.cfg.DataDir, topic, 0)
	release := make(chan struct{})
	var once sync.Once
	stalled := make(chan struct{})
	raftlog.SetBeforeAppend(func(d string) {
		if d != dir {
			return
		}
		once.Do(func() { close(stalled) })
		<-release
	})
	unstall := sync.OnceFunc(func() { close(release); raftlog.SetBeforeAppend(nil) })
	t.Cleanup(unstall)

	acked := make(chan error, 2)
	go func() { acked <- a.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}).FirstErr() }()
	select {
	case <-stalled:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader's round never reached its disk")
	}
	go func() { acked <- b.ProduceSync(ctx, &kgo.Record{Value: []byte("b")}).FirstErr() }()

	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(newClient(t, leader))
	ds, err := adm.DescribeProducers(dctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		buf := make([]byte, 1<<22)
		t.Logf("%s", buf[:runtime.Stack(buf, true)])
		t.Fatalf("DescribeProducers while the round is held: %v (the append lock is held through the round)", err)
	}
	var active int
	ds.EachPartition(func(p kadm.DescribedProducersPartition) {
		if p.Err != nil {
			t.Errorf("DescribeProducers %s-%d: %v", p.Topic, p.Partition, p.Err)
		}
		active += len(p.ActiveProducers)
	})
	if active != 2 {
		t.Errorf("DescribeProducers lists %d producers, want 2", active)
	}
	// b's batch is in the log's order behind a's, not waiting for the lock.
	lp := leader.parts.Get(topic, 0)
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := lp.PendingBatches()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d batches pending in the producer state during the stall, want 2 (a's and b's)", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	unstall()
	for range 2 {
		if err := <-acked; err != nil {
			t.Fatalf("produce after the round went on: %v", err)
		}
	}
	recs := consumeAll(t, leader, topic, 4)
	if len(recs) != 4 {
		t.Fatalf("read %d records back, want 4", len(recs))
	}
}
