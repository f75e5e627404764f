package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admission"
	"github.com/spool-log/spool/node/cluster"
)

// TestClonedDataDirRefused starts a node, without --join, on a copy of a live
// member's data dir (a cloned disk) under another name: Serf rejoins the
// members of the copied snapshot, the cluster refuses the clone (its broker
// id is live), and the clone never serves: Failed delivers the refusal,
// /readyz stays 503 and no Kafka request is answered.
func TestClonedDataDirRefused(t *testing.T) {
	nodes := startCluster(t, 2)
	orig := nodes[1]
	snap := filepath.Join(orig.cfg.DataDir, cluster.Dir, "serf.snapshot")
	retry.Run(t, 10*time.Second, func() error {
		raw, err := os.ReadFile(snap)
		if err != nil || !strings.Contains(string(raw), "alive: spool-1 ") {
			return fmt.Errorf("snapshot %q (%v)", raw, err)
		}
		return nil
	})
	clone := t.TempDir()
	if err := os.CopyFS(clone, os.DirFS(orig.cfg.DataDir)); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, clone)
	cfg.NodeID = orig.NodeID()
	cfg.Gossip.NodeName = "clone"
	n := startNodeUnadmitted(t, cfg)
	select {
	case err := <-n.Failed():
		if !errors.Is(err, membership.ErrDuplicateBrokerID) {
			t.Fatalf("clone failed with %v, want a duplicate broker id", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the clone was not refused")
	}
	if n.Admitted() {
		t.Fatal("the refused clone is admitted")
	}
	if err := n.readiness(); !admission.IsRefusal(err) {
		t.Fatalf("the refused clone's readiness: %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.KafkaAddr()), kgo.AllowAutoTopicCreation(), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cloned", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("the refused clone acknowledged a produce")
	}
	for _, o := range nodes {
		if err := o.readiness(); err != nil {
			t.Fatalf("legitimate node %d unready: %v", o.NodeID(), err)
		}
	}
}
