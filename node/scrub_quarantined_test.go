package node

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spool-log/spool/node/hosted"
)

// /v1/scrub lists what recovery cut into the quarantine only while it is
// there: once purged (spool quarantine purge, or reclaimed after
// --quarantine-retention) its path names nothing.
func TestScrubStatusForgetsPurgedCuts(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	n := startNode(t, cfg)
	createTopic(t, newAdmin(t, n), "cut", 1, nil)
	cl := newClient(t, n)
	for i := range 3 {
		produceRaw(t, cl, "cut", rawBatch(-1, -1, -1, time.Now().UnixMilli(), "record", string(rune('a'+i))))
	}
	cl.Close()
	stopNode(t, n)

	seg := filepath.Join(dir, "cut-0", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-5] ^= 1 // the last batch's payload
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// As if never flushed (a crash: no shutdown checkpoint either), so
	// recovery walks the segment.
	if err := os.WriteFile(filepath.Join(dir, "cut-0", "recovery-point-checkpoint"), []byte("0\n0\n-1 -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, hosted.ShutdownCheckpointFileName)); err != nil {
		t.Fatal(err)
	}
	cfg.KafkaAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	n = startNode(t, cfg)
	q := n.scrub.Status().Quarantined
	if len(q) != 1 || q[0].Topic != "cut" {
		t.Fatalf("quarantined after recovery: %+v, want the cut tail of cut-0", q)
	}
	if _, err := os.Stat(q[0].Quarantine); err != nil {
		t.Fatalf("the cut tail is not in the quarantine: %v", err)
	}
	purged, err := n.quarantine.Purge(0)
	if err != nil || len(purged) != 1 {
		t.Fatalf("purge: %v, %v", purged, err)
	}
	if q := n.scrub.Status().Quarantined; len(q) != 0 {
		t.Fatalf("quarantined after the purge: %+v, want nothing (its path names nothing)", q)
	}
}
