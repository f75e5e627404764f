package topicconfig

import (
	"testing"
	"time"
)

// TestTieredConfigs: remote.storage.enable makes local.retention.* the
// local log's retention (-2: the total's), refuses compaction and a local
// retention above the total, and is described.
func TestTieredConfigs(t *testing.T) {
	d := Defaults{RetentionAge: time.Hour, RetentionBytes: 1000, SegmentBytes: 1 << 20}
	s, err := Parse(d, map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "10"})
	if err != nil {
		t.Fatal(err)
	}
	pc := s.PartitionConfig(d, nil, nil)
	if pc.RetentionBytes != 10 || pc.RetentionAge != time.Hour {
		t.Fatalf("local retention %d bytes, %v; want 10 and the total's hour", pc.RetentionBytes, pc.RetentionAge)
	}
	off, _ := Parse(d, map[string]string{"local.retention.bytes": "10"})
	if pc := off.PartitionConfig(d, nil, nil); pc.RetentionBytes != 1000 {
		t.Fatalf("untiered topic kept %d bytes, want the total 1000", pc.RetentionBytes)
	}
	for _, bad := range []map[string]string{
		{"remote.storage.enable": "yes"},
		{"remote.storage.enable": "true", "cleanup.policy": "compact"},
		{"remote.storage.enable": "true", "local.retention.bytes": "2000"},
		{"remote.storage.enable": "true", "local.retention.ms": "-1"},
		{"local.retention.ms": "-3"},
		{"remote.storage.recovery": "true"}, // restores only a tiered topic
		{"remote.storage.enable": "true", "remote.storage.recovery": "1"},
	} {
		if _, err := Parse(d, bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if r, err := Parse(d, map[string]string{"remote.storage.enable": "true", "remote.storage.recovery": "true"}); err != nil || !r.RemoteRecovery {
		t.Fatalf("remote.storage.recovery=true: %+v, %v", r, err)
	}
	found := map[string]string{}
	for _, e := range s.Describe() {
		found[e.Name] = e.Value
	}
	if found["remote.storage.enable"] != "true" || found["local.retention.bytes"] != "10" || found["local.retention.ms"] != "-2" {
		t.Fatalf("described %v", found)
	}
	for k := range found {
		if _, ok := Keys[k]; !ok {
			t.Errorf("described %s, not a known key", k)
		}
	}
}
