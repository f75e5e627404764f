package node

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/retry"
	"github.com/spool-log/spool/node/replica"
	"github.com/spool-log/spool/node/replica/raftlog"
	"github.com/spool-log/spool/partition"
)

func TestShutdownCheckpointCodec(t *testing.T) {
	in := map[string]replica.ShutdownPoint{
		"orders-0":   {Log: partition.ShutdownPoint{Offset: 120, CleanBase: 100, CleanSize: 4096}, Commit: &raftlog.CommitPoint{Commit: 130, LastIndex: 131, LastTerm: 4}},
		"a-b.c_d-12": {Log: partition.ShutdownPoint{Offset: 0, CleanBase: 0, CleanSize: 0}},
	}
	b := encodeShutdownCheckpoint(in)
	out, err := decodeShutdownCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("decoded %d entries, want %d", len(out), len(in))
	}
	for name, p := range in {
		q, ok := out[name]
		if !ok || q.Log != p.Log || (p.Commit == nil) != (q.Commit == nil) || (p.Commit != nil && *p.Commit != *q.Commit) {
			t.Fatalf("entry %s decoded as %+v, want %+v", name, q, p)
		}
	}
	// Any damaged byte, or a cut anywhere, and the file is not used.
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x20
		if _, err := decodeShutdownCheckpoint(d); !errors.Is(err, errBadShutdownCheckpoint) {
			t.Fatalf("byte %d damaged: %v, want it refused", i, err)
		}
		if _, err := decodeShutdownCheckpoint(b[:i]); !errors.Is(err, errBadShutdownCheckpoint) {
			t.Fatalf("cut at %d: %v, want it refused", i, err)
		}
	}
	// Whole and checksummed, but naming no partition directory.
	for _, name := range []string{"../escape-1", "noindex", "x-01", "x-1 2"} {
		bad := encodeShutdownCheckpoint(map[string]replica.ShutdownPoint{name: {}})
		if _, err := decodeShutdownCheckpoint(bad); !errors.Is(err, errBadShutdownCheckpoint) {
			t.Fatalf("entry %q: %v, want it refused", name, err)
		}
	}
}

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
	path := filepath.Join(dir, shutdownCheckpointFileName)
	retry.Run(t, 20*time.Second, func() error {
		for p := range int32(parts) {
			if hw := third.partition(topic, p).replica.HighWatermark(); hw != perPart {
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
				lp := n.partition(topic, p)
				if lp == nil {
					return fmt.Errorf("partition %d not open", p)
				}
				if hw := lp.replica.HighWatermark(); hw != perPart {
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
	points, err := decodeShutdownCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		name := filepath.Base(partitionDir(dir, topic, p))
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

// TestShutdownCheckpointKeepsUntakenEntries: entries of directories no open
// took are written again at the next stop (nothing touched them), those of
// directories gone are dropped, and a taken entry is handed over once.
func TestShutdownCheckpointKeepsUntakenEntries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"kept-0", "opened-0"} {
		if err := os.Mkdir(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	in := map[string]replica.ShutdownPoint{
		"kept-0":   {Log: partition.ShutdownPoint{Offset: 5, CleanSize: 100}},
		"opened-0": {Log: partition.ShutdownPoint{Offset: 7, CleanSize: 200}},
		"gone-0":   {Log: partition.ShutdownPoint{Offset: 9, CleanSize: 300}},
	}
	if err := writeShutdownCheckpoint(dir, in); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	sp := takeShutdownCheckpoint(dir, log)
	if _, err := os.Stat(filepath.Join(dir, shutdownCheckpointFileName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint not removed when taken: %v", err)
	}
	p, written := sp.take(filepath.Join(dir, "opened-0"))
	if p == nil || p.Log.Offset != 7 || written.IsZero() {
		t.Fatalf("take: %+v at %v", p, written)
	}
	if again, _ := sp.take(filepath.Join(dir, "opened-0")); again != nil {
		t.Fatal("an entry was handed over twice")
	}
	want := map[string]replica.ShutdownPoint{"kept-0": in["kept-0"]}
	if got := sp.untaken(dir); !maps.Equal(got, want) {
		t.Fatalf("untaken %v, want %v", got, want)
	}
}
