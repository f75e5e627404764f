package datadir

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
)

// Entries older than the retention are reclaimed, newer ones kept; a purge
// with no age reclaims everything.
func TestQuarantineReclaim(t *testing.T) {
	dir := t.TempDir()
	q := NewQuarantine(dir, logrus.New())
	now := time.Now()
	old, err := q.Path("orders-3", now.Add(-10*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := q.Path("orders-3", now)
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
	again, err := q.Path("orders-3", now)
	if err != nil || again == fresh {
		t.Fatalf("a second drop of one thing in one second reuses %s (%v)", again, err)
	}
	purged, err := q.Purge(DefaultQuarantineRetention)
	if err != nil {
		t.Fatal(err)
	}
	if len(purged) != 1 || purged[0].Path != old {
		t.Fatalf("purged %v, want only %s", purged, old)
	}
	left, err := q.List()
	if err != nil || len(left) != 1 || left[0].Path != fresh || left[0].Bytes != 1 {
		t.Fatalf("left %+v (%v), want %s", left, err, fresh)
	}
	if purged, err = q.Purge(0); err != nil || len(purged) != 1 {
		t.Fatalf("purge all: %v %v", purged, err)
	}
}
