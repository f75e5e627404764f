package node

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
)

// A catalog can say a topic has fewer partitions than this node opened:
// a growth (CreatePartitions) lost to a concurrent whole-entry alteration
// on a node of the version before per-partition merging (a new node keeps
// the larger count, membership/topic_merge.go), saved into this node's
// catalog file by that version. That is no deletion: at the next start
// the added partition's records stay in place (removeOrphans), a line says
// what happened, and growing the topic again serves them.
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
		if n.parts.Get("grown", 1) == nil {
			return errors.New("partition 1 not open")
		}
		return nil
	})
	cl := newClient(t, n, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := &kgo.Record{Topic: "grown", Partition: 1, Value: []byte("acknowledged")}
	if err := cl.ProduceSync(testCtx(t), rec).FirstErr(); err != nil || rec.Partition != 1 {
		t.Fatalf("produce to partition 1: %v (partition %d)", err, rec.Partition)
	}
	if lp := n.parts.Get("grown", 1); lp == nil || lp.Replica.LogEndOffset() != 1 {
		t.Fatal("partition 1 does not hold the record")
	}

	stopNode(t, n)

	// What the lost race leaves in the file: the same incarnation, one
	// partition, as the previous version wrote it (no stamps).
	files, _ := filepath.Glob(filepath.Join(dir, "*", "catalog.json"))
	if top, _ := filepath.Glob(filepath.Join(dir, "catalog.json")); len(top) > 0 {
		files = append(files, top...)
	}
	if len(files) != 1 {
		t.Fatalf("catalog files: %v", files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var snap map[string]any
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	shrunk := false
	for _, x := range snap["topics"].([]any) {
		e := x.(map[string]any)
		if e["name"] != "grown" {
			continue
		}
		e["partitions"] = 1
		e["replicas"] = e["replicas"].([]any)[:1]
		e["lamport"] = e["lamport"].(float64) + 10
		delete(e, "stamps")
		delete(e, "born")
		delete(e, "wide")
		delete(e, "led")
		shrunk = true
	}
	if !shrunk {
		t.Fatal("topic not in the catalog file")
	}
	if raw, err = json.Marshal(snap); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], raw, 0o644); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "grown-1", "00000000000000000000.log")
	hook.Reset()

	cfg.KafkaAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	n = startNode(t, cfg)
	defer stopNode(t, n)
	if q := quarantined(t, dir); len(q) != 0 {
		t.Fatalf("quarantine after the restart: %v, want nothing", q)
	}
	kept := false
	for _, e := range hook.AllEntries() {
		kept = kept || (e.Data["topic"] == "grown" && e.Data["partition"] == int32(1) && e.Level <= logrus.WarnLevel)
	}
	if !kept {
		t.Error("no line says partition 1 is beyond the catalog's count and kept")
	}
	if fileLen(t, seg) == 0 {
		t.Fatal("partition 1 lost its record at the restart")
	}
	// Grown again, the partition is served with its record.
	if r, err := newAdmin(t, n).CreatePartitions(testCtx(t), 1, "grown"); err != nil || r["grown"].Err != nil {
		t.Fatalf("grow again: %v %v", err, r["grown"].Err)
	}
	retry.Run(t, 10*time.Second, func() error {
		if lp := n.parts.Get("grown", 1); lp == nil || lp.Replica.LogEndOffset() != 1 {
			return errors.New("partition 1 not open with its record")
		}
		return nil
	})
}
