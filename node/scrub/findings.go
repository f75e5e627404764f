package scrub

import (
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"time"

	"github.com/spool-log/spool/internal/atomicfile"
	"github.com/spool-log/spool/partition"
)

// Findings survive a restart: every new one (a damaged batch a pass found,
// bytes recovery cut) is written to Config.FindingsFile, and a node that
// starts reads them back. /v1/scrub lists them as before, and a partition
// that opens has its damaged batches rechecked (Recheck): the marks that
// keep a fetch off them live in memory, so without the recheck a restart
// would serve damaged bytes again until the next pass. Written whole, as a
// temp file renamed over the old (atomicfile), under saveMu only: never
// while mu, which Status takes, is held.

// maxFindings bounds what is kept (and read back): the newest, by when
// they were found.
const maxFindings = 10_000

// maxFindingsFileBytes bounds the file a start reads: a few hundred bytes
// a finding.
const maxFindingsFileBytes = 16 << 20

// savedFindings is the file's content.
type savedFindings struct {
	Corrupt     []Finding `json:"corrupt"`
	Quarantined []Finding `json:"quarantined"`
	Repairs     []Repair  `json:"repairs,omitempty"`
}

// Recheckable is the part of a partition's replica a recheck uses.
type Recheckable interface {
	Recheck(c partition.Corruption) (bool, error)
}

// loadFindings reads the findings an earlier run kept; a missing file is
// none, and a damaged one is logged and ignored (the next pass finds the
// damage again).
func (s *Scrubber) loadFindings() {
	if s.cfg.FindingsFile == "" {
		return
	}
	b, err := atomicfile.ReadBounded(s.cfg.FindingsFile, maxFindingsFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var saved savedFindings
	if err == nil {
		err = json.Unmarshal(b, &saved)
	}
	if err != nil {
		s.cfg.Log.WithError(err).WithField("file", s.cfg.FindingsFile).Warn("scrub findings of the last run unreadable; the next pass finds the damage again")
		return
	}
	s.found = make(map[string]time.Time, len(saved.Corrupt))
	s.kept = make(map[string]Finding, len(saved.Corrupt))
	for _, f := range trim(saved.Corrupt) {
		k := scrubKey(f.Topic, f.Partition, f.Corruption)
		s.found[k], s.kept[k] = f.FoundAt, f
	}
	s.quarantined = trim(saved.Quarantined)
	if len(saved.Repairs) > maxRepairs {
		saved.Repairs = saved.Repairs[len(saved.Repairs)-maxRepairs:]
	}
	s.repairs = saved.Repairs
}

// trim keeps the newest maxFindings of fs.
func trim(fs []Finding) []Finding {
	if len(fs) <= maxFindings {
		return fs
	}
	slices.SortStableFunc(fs, func(a, b Finding) int { return a.FoundAt.Compare(b.FoundAt) })
	return fs[len(fs)-maxFindings:]
}

// save writes the findings kept now. Called after a change, outside mu.
func (s *Scrubber) save() {
	if s.cfg.FindingsFile == "" {
		return
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	saved := savedFindings{Corrupt: make([]Finding, 0, len(s.kept)), Quarantined: slices.Clone(s.quarantined), Repairs: slices.Clone(s.repairs)}
	for _, f := range s.kept {
		saved.Corrupt = append(saved.Corrupt, f)
	}
	s.mu.Unlock()
	slices.SortFunc(saved.Corrupt, func(a, b Finding) int { return a.FoundAt.Compare(b.FoundAt) })
	saved.Corrupt, saved.Quarantined = trim(saved.Corrupt), trim(saved.Quarantined)
	b, err := json.Marshal(saved)
	if err == nil {
		err = atomicfile.Write(s.cfg.FindingsFile, b, 0o644)
	}
	if err != nil {
		s.cfg.Log.WithError(err).WithField("file", s.cfg.FindingsFile).Error("scrub findings not saved: a restart serves the damaged batches again until a pass finds them")
	}
}

// Recheck marks again, in the log of topic's partition index that just
// opened, each damaged batch an earlier run found there (partition.Log's
// Recheck); a finding its log no longer holds damaged (a segment retention
// or cleaning replaced, mended bytes) is dropped. The node calls it as
// the partition opens, before it serves.
func (s *Scrubber) Recheck(topic string, index int32, log Recheckable) {
	s.mu.Lock()
	var mine []Finding
	for _, f := range s.kept {
		if f.Topic == topic && f.Partition == index {
			mine = append(mine, f)
		}
	}
	s.mu.Unlock()
	dropped := false
	for _, f := range mine {
		still, err := log.Recheck(f.Corruption)
		if err != nil {
			// Kept: the next start, or the next pass, looks again.
			s.cfg.Log.WithError(err).WithFields(corruptionFields(topic, index, f.Corruption)).Error("recheck of a damaged batch found by an earlier scrub failed")
			continue
		}
		fields := corruptionFields(topic, index, f.Corruption)
		if still {
			s.cfg.Log.WithFields(fields).Warn("a damaged batch an earlier scrub found is still damaged; fetches of it fail with KAFKA_STORAGE_ERROR")
			continue
		}
		s.cfg.Log.WithFields(fields).Info("a damaged batch an earlier scrub found is gone from the log (replaced, truncated or mended)")
		s.mu.Lock()
		k := scrubKey(topic, index, f.Corruption)
		delete(s.kept, k)
		delete(s.found, k)
		s.mu.Unlock()
		dropped = true
	}
	if dropped {
		s.save()
	}
}
