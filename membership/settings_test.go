package membership

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/spool-log/spool/internal/retry"
)

// A cluster setting set on one node reaches every node by gossip, one set
// where no event carried it spreads by anti-entropy, the later of two
// changes wins everywhere, it survives a save and a load, and bad names
// and values are refused.
func TestSettingsSpreadAndPersist(t *testing.T) {
	nodes := cluster(t, 3)
	a, b, c := nodes[0], nodes[1], nodes[2]
	if c.RebalancePaused() {
		t.Fatal("paused before anyone paused")
	}
	if err := a.SetRebalancePaused(true); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 10*time.Second, func() error {
		for _, n := range nodes {
			if !n.RebalancePaused() {
				return fmt.Errorf("%s not paused", n.cfg.NodeName)
			}
		}
		return nil
	})
	if err := b.SetRebalancePaused(false); err != nil {
		t.Fatal(err)
	}
	quiet := SettingEntry{Name: "test.quiet", Value: "x", Lamport: a.catalog.tick(), Origin: 1}
	if err := mergeEntries(a.Agent, a.settings, []SettingEntry{quiet}, "local"); err != nil {
		t.Fatal(err)
	}
	retry.Run(t, 20*time.Second, func() error {
		for _, n := range nodes {
			if v, _ := n.Setting("test.quiet"); n.RebalancePaused() || v != "x" {
				return fmt.Errorf("%s paused %v, test.quiet %q", n.cfg.NodeName, n.RebalancePaused(), v)
			}
		}
		return sameCatalog(nodes...)()
	})
	if err := a.SetSetting("Bad Name", "x"); !errors.Is(err, ErrInvalidSetting) {
		t.Errorf("bad name: %v", err)
	}
	if err := a.SetSetting("ok", string(make([]byte, MaxSettingValue+1))); !errors.Is(err, ErrInvalidSetting) {
		t.Errorf("long value: %v", err)
	}
	c.stop()
	back, err := loadCatalog(c.catalogPath)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := back.setting(SettingRebalancePaused); !ok || e.Value != "false" {
		t.Errorf("node 3's file: %+v %v, want paused=false", e, ok)
	}
}

// An empty settings set leaves the digest as before settings existed.
func TestSettingsDigest(t *testing.T) {
	c := NewCatalog()
	empty := c.Digest()
	if _, err := c.MergeSettings([]SettingEntry{{Name: "a", Value: "1", Lamport: 1, Origin: 1}}); err != nil {
		t.Fatal(err)
	}
	if c.Digest() == empty {
		t.Error("digest unchanged by a setting")
	}
}
