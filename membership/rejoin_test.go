package membership

import (
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// withoutSerfLog drops every line Serf logs: the rejoin's outcome must not
// come from them.
func withoutSerfLog() nodeOpt {
	return func(c *Config) { c.serfLog = log.New(io.Discard, "", 0) }
}

// waitSnapshotLists waits until n's Serf snapshot lists member as alive.
func waitSnapshotLists(t *testing.T, n *testNode, member string) {
	t.Helper()
	retry.Run(t, 5*time.Second, func() error {
		raw, err := os.ReadFile(filepath.Join(n.cfg.DataDir, snapshotFile))
		if err != nil || !strings.Contains(string(raw), "alive: "+member+" ") {
			return fmt.Errorf("snapshot %q (%v)", raw, err)
		}
		return nil
	})
}

// TestSnapshotRejoinOutcomeWithoutSerfLog: a member restarted without
// seeds rejoins its snapshot's members, and Rejoined settles, with Serf's
// log lines dropped: both when a member answers (RejoinErr nil, the peer
// alive) and when none does (RejoinErr names the member tried).
func TestSnapshotRejoinOutcomeWithoutSerfLog(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1)
	b := startNode(t, log, 2)
	b.join(t, a)
	waitSnapshotLists(t, b, "node-1")
	dir := b.cfg.DataDir
	_, portStr, _ := net.SplitHostPort(b.gossipAddr())
	port, _ := strconv.Atoi(portStr) // a restart binds its gossip port again
	b.stop()

	back := startNode(t, log, 2, withDir(dir), withPort(port), withoutSerfLog())
	select {
	case <-back.Rejoined():
	case <-time.After(slow(10 * time.Second)):
		t.Fatal("the snapshot rejoin did not settle with Serf's log dropped")
	}
	if err := back.RejoinErr(); err != nil {
		t.Fatalf("RejoinErr after rejoining a live member: %v", err)
	}
	if err := back.Refusal(); err != nil {
		t.Fatalf("Refusal: %v", err)
	}
	retry.Run(t, slow(5*time.Second), wantStatus(back.Agent, "node-1", StatusAlive))
	waitSnapshotLists(t, back, "node-1")
	back.stop()
	a.stop()

	alone := startNode(t, log, 2, withDir(dir), withPort(port), withoutSerfLog())
	select {
	case <-alone.Rejoined():
	case <-time.After(slow(20 * time.Second)):
		t.Fatal("the snapshot rejoin did not settle with its only peer down and Serf's log dropped")
	}
	err := alone.RejoinErr()
	if err == nil || !strings.Contains(err.Error(), "node-1") {
		t.Fatalf("RejoinErr with the peer down: %v, want one naming node-1", err)
	}
	if err := alone.Refusal(); err != nil {
		t.Fatalf("Refusal: %v", err)
	}
}

// TestSnapshotMembers replays a snapshot as Serf does.
func TestSnapshotMembers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap")
	body := "alive: node-1 127.0.0.1:7001\n" +
		"alive: node-2 127.0.0.1:7002\n" +
		"clock: 7\n" +
		"alive: a b 127.0.0.1:7003\n" + // a name with a space: the address is the last field
		"not-alive: node-2\n" +
		"leave\n" + // ignored: RejoinAfterLeave
		"alive: self 127.0.0.1:7000\n" +
		"alive: torn 127.0.0.1:7004" // no newline: ignored, as Serf does
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := snapshotMembers(path, "self")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"node-1": "127.0.0.1:7001", "a b": "127.0.0.1:7003"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("snapshotMembers = %v, want %v", got, want)
	}
	if got, err := snapshotMembers(filepath.Join(t.TempDir(), "none"), "self"); err != nil || len(got) != 0 {
		t.Fatalf("missing snapshot: %v, %v", got, err)
	}
}
