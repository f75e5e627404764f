package membership

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// TestLoneOwnerStaysHealthy: a node alone in its cluster, joined by an
// impostor with its broker id, refuses it and stays healthy; the refusal is
// the joiner's.
func TestLoneOwnerStaysHealthy(t *testing.T) {
	log := newTestLogger(t)
	owner := startNode(t, log, 1)
	<-owner.Rejoined()
	impostor := startNode(t, log, 1, withName("impostor"))
	err := impostor.Join(context.Background(), owner.gossipAddr())
	if !errors.Is(err, ErrDuplicateBrokerID) {
		t.Fatalf("impostor join: %v, want ErrDuplicateBrokerID", err)
	}
	if !errors.Is(impostor.Refusal(), ErrDuplicateBrokerID) {
		t.Fatalf("impostor's refusal: %v", impostor.Refusal())
	}
	if err := owner.Health(); err != nil {
		t.Fatalf("the lone owner is unhealthy after refusing an impostor: %v", err)
	}
	if err := owner.Refusal(); err != nil {
		t.Fatalf("the lone owner records a refusal of its own: %v", err)
	}
}

// TestSnapshotRejoinRefused: a copy of a live member's data dir (a cloned
// disk) starts under another name. Serf rejoins the members of its snapshot
// by itself; the cluster refuses the clone, which has the live member's
// broker id, and Rejoined and Refusal say so; the others stay healthy.
func TestSnapshotRejoinRefused(t *testing.T) {
	log := newTestLogger(t)
	a := startNode(t, log, 1)
	orig := startNode(t, log, 3)
	orig.join(t, a)
	retry.Run(t, 5*time.Second, wantStatus(a.Agent, "node-3", StatusAlive))
	clone := t.TempDir()
	retry.Run(t, 5*time.Second, func() error {
		raw, err := os.ReadFile(filepath.Join(orig.cfg.DataDir, snapshotFile))
		if err != nil || !strings.Contains(string(raw), "alive: node-1 ") {
			return fmt.Errorf("snapshot %q (%v)", raw, err)
		}
		return nil
	})
	if err := os.CopyFS(clone, os.DirFS(orig.cfg.DataDir)); err != nil {
		t.Fatal(err)
	}

	back := startNode(t, log, 3, withDir(clone), withName("clone"))
	select {
	case <-back.Rejoined():
	case <-time.After(slow(20 * time.Second)):
		t.Fatal("the snapshot rejoin did not end")
	}
	if !errors.Is(back.Refusal(), ErrDuplicateBrokerID) {
		t.Fatalf("refusal after the rejoin: %v, want ErrDuplicateBrokerID", back.Refusal())
	}
	for _, n := range []*testNode{a, orig} {
		if err := n.Health(); err != nil {
			t.Fatalf("legitimate %s unhealthy: %v", n.cfg.NodeName, err)
		}
	}
}
