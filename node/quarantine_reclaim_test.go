package node

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/retry"
)

// Entries older than the retention are reclaimed, newer ones kept; a purge
// with no age reclaims everything.
func TestQuarantineReclaim(t *testing.T) {
	dir := t.TempDir()
	n := &Node{cfg: Config{DataDir: dir}, log: logrus.New()}
	now := time.Now()
	old, err := n.quarantinePath("orders-3", now.Add(-10*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := n.quarantinePath("orders-3", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{old, fresh} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "00000000000000000000.log"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	again, err := n.quarantinePath("orders-3", now)
	if err != nil || again == fresh {
		t.Fatalf("a second drop of one thing in one second reuses %s (%v)", again, err)
	}
	purged, err := n.PurgeQuarantine(defaultQuarantineRetention)
	if err != nil {
		t.Fatal(err)
	}
	if len(purged) != 1 || purged[0].Path != old {
		t.Fatalf("purged %v, want only %s", purged, old)
	}
	left, err := n.Quarantine()
	if err != nil || len(left) != 1 || left[0].Path != fresh || left[0].Bytes != 1 {
		t.Fatalf("left %+v (%v), want %s", left, err, fresh)
	}
	if purged, err = n.PurgeQuarantine(0); err != nil || len(purged) != 1 {
		t.Fatalf("purge all: %v %v", purged, err)
	}
}

// A running node reclaims what it quarantined once QuarantineRetention has
// passed.
func TestQuarantineRetention(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.QuarantineRetention = time.Second
	n := startNode(t, cfg)
	adm := newAdmin(t, n)
	createTopic(t, adm, "brief", 1, nil)
	resp, err := adm.DeleteTopics(testCtx(t), "brief")
	if err != nil || resp["brief"].Err != nil {
		t.Fatalf("delete: %v %v", err, resp["brief"].Err)
	}
	if q, err := n.Quarantine(); err != nil || len(q) != 1 {
		t.Fatalf("quarantine after the delete: %v %v", q, err)
	}
	retry.Run(t, 20*time.Second, func() error {
		q, err := n.Quarantine()
		if err != nil {
			return err
		}
		if len(q) != 0 {
			return fmt.Errorf("still quarantined: %v", q)
		}
		return nil
	})
}
