package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/hosted"
)

// TestRestartFromShutdownCheckpoint: a node of three holding R=3 replicas
// stops and leaves one shutdown checkpoint naming every replica, with its
// log end and its group's commit; it restarts from it (the file is removed
// as it starts, so a crash from then on cannot trust it) and from a
// damaged one (ignored: every log recovers on its own), serving every
// record each time.
func TestRestartFromShutdownCheckpoint(t *testing.T) {
	nodes := startCluster(t, 3)
	const topic, parts, perPart = "ckpt", 3, 10
	startReplicatedTopic(t, nodes, topic, parts, 3)
	produceTo(t, nodes[0], topic, parts, perPart, 0)
	third := nodes[2]
	dir := third.cfg.DataDir
	path := filepath.Join(dir, hosted.ShutdownCheckpointFileName)
	retry.Run(t, 20*time.Second, func() error {
		for p := range int32(parts) {
			if hw := third.parts.Get(topic, p).Replica.HighWatermark(); hw != perPart {
				return fmt.Errorf("node 3's replica of partition %d at high watermark %d", p, hw)
			}
		}
		return nil
	})

	restart := func() *Node {
		t.Helper()
		cfg := testConfig(t, dir)
		cfg.NodeID = 3
		cfg.Gossip.Join = []string{nodes[0].Membership().Local().GossipAddr}
		n := startNode(t, cfg)
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the shutdown checkpoint is still there after the start (%v): a crash would trust it", err)
		}
		retry.Run(t, 30*time.Second, func() error {
			for p := range int32(parts) {
				lp := n.parts.Get(topic, p)
				if lp == nil {
					return fmt.Errorf("partition %d not open", p)
				}
				if hw := lp.Replica.HighWatermark(); hw != perPart {
					return fmt.Errorf("partition %d at high watermark %d after the restart", p, hw)
				}
			}
			return nil
		})
		return n
	}

	stopNode(t, third)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no shutdown checkpoint after a clean stop: %v", err)
	}
	points, err := hosted.DecodeShutdownCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		name := filepath.Base(hosted.PartitionDir(dir, topic, p))
		e, ok := points[name]
		if !ok || e.Log.Offset != perPart || e.Commit == nil || e.Commit.Commit != e.Commit.LastIndex {
			t.Fatalf("entry of %s: %+v (present %v), want the log end %d, everything committed", name, e, ok, perPart)
		}
	}
	third = restart()
	consumeAll(t, third, topic, parts*perPart)

	stopNode(t, third)
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	third = restart()
	consumeAll(t, third, topic, parts*perPart)
}
