package node

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
)

// A growth (CreatePartitions) can lose to an alteration made concurrently
// on another node from the entry before it (a config change with a later
// Lamport time): the catalog then says the topic has fewer partitions than
// this node opened. That is no deletion: the added partition's records stay
// in place, neither at once (reconcile) nor at the next start
// (removeOrphans), an ERROR line says what happened, and growing the topic
// again serves them.
func TestLostGrowthKeepsPartitionData(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	logger := logrus.New()
	logger.SetOutput(os.Stderr)
	logger.SetLevel(logrus.WarnLevel)
	hook := logtest.NewLocal(logger)
	cfg.Logger = logger
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	createTopic(t, adm, "grown", 1, nil)
	if r, err := adm.CreatePartitions(testCtx(t), 1, "grown"); err != nil || r["grown"].Err != nil {
		t.Fatalf("grow: %v %v", err, r["grown"].Err)
	}
	retry.Run(t, 10*time.Second, func() error {
		if n.partition("grown", 1) == nil {
			return errors.New("partition 1 not open")
		}
		return nil
	})
	cl := newClient(t, n, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := &kgo.Record{Topic: "grown", Partition: 1, Value: []byte("acknowledged")}
	if err := cl.ProduceSync(testCtx(t), rec).FirstErr(); err != nil || rec.Partition != 1 {
		t.Fatalf("produce to partition 1: %v (partition %d)", err, rec.Partition)
	}
	if lp := n.partition("grown", 1); lp == nil || lp.replica.LogEndOffset() != 1 {
		t.Fatal("partition 1 does not hold the record")
	}

	// What the lost race leaves: the same incarnation, one partition.
	if _, err := n.agent.AlterTopic("grown", func(e *membership.TopicEntry) error {
		e.Partitions, e.Replicas = 1, e.Replicas[:1]
		e.Config = map[string]string{"retention.ms": "86400000"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 10*time.Second, func() error {
		for _, e := range hook.AllEntries() {
			if e.Data["topic"] == "grown" && e.Data["partition"] == int32(1) {
				return nil
			}
		}
		return errors.New("no reconcile has looked at partition 1 yet")
	})
	if q := quarantined(t, dir); len(q) != 0 {
		t.Fatalf("quarantine after the shrunk catalog: %v, want nothing", q)
	}
	lostLogged := false
	for _, e := range hook.AllEntries() {
		lostLogged = lostLogged || (e.Level == logrus.ErrorLevel && e.Data["partitions_before"] == int32(2) && e.Data["partitions_now"] == int32(1))
	}
	if !lostLogged {
		t.Error("no ERROR line says the growth was lost")
	}
	seg := filepath.Join(dir, "grown-1", "00000000000000000000.log")
	if fileLen(t, seg) == 0 {
		t.Fatal("partition 1 lost its record")
	}
	stopNode(t, n)

	cfg.KafkaAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	n = startNode(t, cfg)
	defer stopNode(t, n)
	if q := quarantined(t, dir); len(q) != 0 {
		t.Fatalf("quarantine after the restart: %v, want nothing", q)
	}
	if fileLen(t, seg) == 0 {
		t.Fatal("partition 1 lost its record at the restart")
	}
	// Grown again, the partition is served with its record.
	if r, err := newAdmin(t, n).CreatePartitions(testCtx(t), 1, "grown"); err != nil || r["grown"].Err != nil {
		t.Fatalf("grow again: %v %v", err, r["grown"].Err)
	}
	retry.Run(t, 10*time.Second, func() error {
		if lp := n.partition("grown", 1); lp == nil || lp.replica.LogEndOffset() != 1 {
			return errors.New("partition 1 not open with its record")
		}
		return nil
	})
}
