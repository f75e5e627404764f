package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

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
	if q, err := n.quarantine.List(); err != nil || len(q) != 1 {
		t.Fatalf("quarantine after the delete: %v %v", q, err)
	}
	retry.Run(t, 20*time.Second, func() error {
		q, err := n.quarantine.List()
		if err != nil {
			return err
		}
		if len(q) != 0 {
			return fmt.Errorf("still quarantined: %v", q)
		}
		return nil
	})
}
