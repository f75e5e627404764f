package scrub

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/partition"
)

// A repair's steps update one entry per partition until it is done; the
// rebuild drops the partition's findings (their segments went into
// quarantine with the damaged copy); the repairs are counted, and read back
// by the next scrubber (a restart), without the counts since start.
func TestRepairsRecordedAndKeptAcrossRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scrub-findings.json")
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	mc := metrics.DefaultConfig("spool")
	mc.EnableHostname = false
	m, err := metrics.New(mc, sink)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{FindingsFile: file, Targets: func() []Target { return nil }, Log: logrus.New(), Metrics: m}
	s := New(cfg)
	damage := []partition.Corruption{{Segment: "seg", Position: 40, Offset: 10, EndOffset: 12, Reason: "crc"}}
	s.mu.Lock()
	s.kept[scrubKey("t", 1, damage[0])] = Finding{Topic: "t", Partition: 1, FoundAt: time.Now().UTC(), Corruption: damage[0]}
	s.mu.Unlock()

	found := time.Now().UTC().Add(-time.Minute)
	s.OnRepair(Repair{Topic: "t", Partition: 1, State: RepairWaiting, Detail: "1 of the other voters", Damage: damage, FoundAt: found})
	if st := s.Status(); len(st.Repairs) != 1 || st.Repairs[0].State != RepairWaiting || st.RepairsStarted != 0 {
		t.Fatalf("waiting: %+v", st)
	}
	s.OnRepair(Repair{Topic: "t", Partition: 1, State: RepairRebuilding, Damage: damage, Quarantine: "/q/x", FoundAt: time.Now().UTC(), StartedAt: time.Now().UTC()})
	s.OnRepair(Repair{Topic: "t", Partition: 1, State: RepairDone, FoundAt: time.Now().UTC()})
	st := s.Status()
	if len(st.Repairs) != 1 || st.RepairsStarted != 1 || st.RepairsDone != 1 {
		t.Fatalf("after the rebuild: %+v", st)
	}
	r := st.Repairs[0]
	if r.State != RepairDone || !r.FoundAt.Equal(found) || r.Quarantine != "/q/x" || len(r.Damage) != 1 || r.StartedAt.IsZero() {
		t.Fatalf("repair %+v: want done, found when first reported, its quarantine, damage and start kept", r)
	}
	if len(s.kept) != 0 {
		t.Fatalf("findings of the rebuilt partition kept: %+v", s.kept)
	}
	// A second damage of the same partition is a new entry.
	s.OnRepair(Repair{Topic: "t", Partition: 1, State: RepairWaiting, Damage: damage})
	if st := s.Status(); len(st.Repairs) != 2 {
		t.Fatalf("a new damage after a repair: %d entries", len(st.Repairs))
	}
	counters := map[string]float32{}
	gauges := map[string]float32{}
	for _, iv := range sink.Data() {
		for k, c := range iv.Counters {
			counters[k] += float32(c.Sum)
		}
		for k, g := range iv.Gauges {
			gauges[k] = g.Value
		}
	}
	if counters["spool.scrub.repairs_started"] != 1 || counters["spool.scrub.repairs_completed"] != 1 || gauges["spool.scrub.repairs_waiting"] != 1 {
		t.Fatalf("counters %v, gauges %v", counters, gauges)
	}

	s2 := New(cfg)
	st2 := s2.Status()
	if len(st2.Repairs) != 2 || st2.Repairs[0].State != RepairDone || st2.Repairs[0].Quarantine != "/q/x" || st2.RepairsStarted != 0 {
		t.Fatalf("read back: %+v", st2)
	}
}
