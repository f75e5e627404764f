package scrub

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/partition"
)

type fakeLog struct {
	damaged map[int64]bool
	asked   []int64
}

func (l *fakeLog) Recheck(c partition.Corruption) (bool, error) {
	l.asked = append(l.asked, c.Position)
	return l.damaged[c.Position], nil
}

// Findings are written as they are found and read back by the next
// scrubber; a recheck keeps what is still damaged and drops the rest, in
// the file too; a damaged file is ignored, not fatal.
func TestFindingsKeptAcrossRestarts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scrub-findings.json")
	cfg := Config{FindingsFile: file, Targets: func() []Target { return nil }, Log: logrus.New()}
	s := New(cfg)
	cut := s.OnRecoveryCut("t", 0)
	cut(partition.Corruption{Segment: "seg-a", Position: 7, Quarantine: filepath.Join(t.TempDir(), "kept")})
	now := time.Now().UTC()
	s.mu.Lock()
	for _, pos := range []int64{100, 200} {
		c := partition.Corruption{Segment: "seg-b", Position: pos, Reason: "crc"}
		s.kept[scrubKey("t", 1, c)] = Finding{Topic: "t", Partition: 1, FoundAt: now, Corruption: c}
	}
	s.mu.Unlock()
	s.save()

	s2 := New(cfg)
	if len(s2.kept) != 2 || len(s2.quarantined) != 1 || s2.quarantined[0].Position != 7 {
		t.Fatalf("read back: kept %+v, quarantined %+v", s2.kept, s2.quarantined)
	}
	log := &fakeLog{damaged: map[int64]bool{200: true}}
	s2.Recheck("t", 1, log)
	if len(log.asked) != 2 {
		t.Fatalf("rechecked %v, want both findings of t/1", log.asked)
	}
	s2.Recheck("t", 9, log) // no finding there
	if len(log.asked) != 2 {
		t.Fatalf("rechecked %v for a partition with no finding", log.asked)
	}
	s3 := New(cfg)
	if len(s3.kept) != 1 {
		t.Fatalf("after the recheck the file keeps %+v, want only the batch still damaged", s3.kept)
	}
	for _, f := range s3.kept {
		if f.Position != 200 || !f.FoundAt.Equal(now) {
			t.Fatalf("kept %+v", f)
		}
	}

	if err := os.WriteFile(file, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s4 := New(cfg); len(s4.kept) != 0 || len(s4.quarantined) != 0 {
		t.Fatalf("a damaged file gave %+v %+v", s4.kept, s4.quarantined)
	}
}
