package scrub

import (
	"slices"
	"time"

	"github.com/spool-log/spool/adminapi"
)

// Repairs: a damaged replica of a replicated partition is rebuilt from its
// peers (node/hosted's repair.go), which reports each step here. Each
// partition's latest repair not yet done is updated in place; done ones
// stay, the newest maxRepairs of them, in FindingsFile with the findings,
// so /v1/scrub (`spool scrub`) lists them across restarts. Counted in
// spool_scrub_repairs_started and spool_scrub_repairs_completed, and the
// replicas waiting (damage fenced, the rest of the group not yet a
// caught-up majority) in the spool_scrub_repairs_waiting gauge.

// Repair is one damaged replica's rebuild.
type Repair = adminapi.ScrubRepair

// maxRepairs bounds the repairs kept.
const maxRepairs = 1000

// Repair states, as node/hosted reports them.
const (
	RepairWaiting    = "waiting"
	RepairRebuilding = "rebuilding"
	RepairDone       = "repaired"
)

// OnRepair records a step of a replica's repair.
func (s *Scrubber) OnRepair(r Repair) {
	s.mu.Lock()
	i := slices.IndexFunc(s.repairs, func(o Repair) bool {
		return o.Topic == r.Topic && o.Partition == r.Partition && o.State != RepairDone
	})
	if i >= 0 {
		old := s.repairs[i]
		if !old.FoundAt.IsZero() && (r.FoundAt.IsZero() || old.FoundAt.Before(r.FoundAt)) {
			r.FoundAt = old.FoundAt
		}
		if r.StartedAt.IsZero() {
			r.StartedAt = old.StartedAt
		}
		if r.Quarantine == "" {
			r.Quarantine = old.Quarantine
		}
		if len(r.Damage) == 0 {
			r.Damage = old.Damage
		}
		s.repairs[i] = r
	} else {
		if r.FoundAt.IsZero() {
			r.FoundAt = time.Now().UTC()
		}
		s.repairs = append(s.repairs, r)
		if len(s.repairs) > maxRepairs {
			s.repairs = slices.Delete(s.repairs, 0, len(s.repairs)-maxRepairs)
		}
	}
	switch r.State {
	case RepairRebuilding:
		s.repairsStarted++
		// The damaged copy went into quarantine: its findings name
		// segments the rebuilt log does not have.
		for k, f := range s.kept {
			if f.Topic == r.Topic && f.Partition == r.Partition {
				delete(s.kept, k)
				delete(s.found, k)
			}
		}
	case RepairDone:
		s.repairsDone++
	}
	waiting := 0
	for _, o := range s.repairs {
		if o.State == RepairWaiting {
			waiting++
		}
	}
	s.mu.Unlock()
	switch r.State {
	case RepairRebuilding:
		s.cfg.Metrics.IncrCounter([]string{"scrub", "repairs_started"}, 1)
	case RepairDone:
		s.cfg.Metrics.IncrCounter([]string{"scrub", "repairs_completed"}, 1)
	}
	s.cfg.Metrics.SetGauge([]string{"scrub", "repairs_waiting"}, float32(waiting))
	s.save()
}
