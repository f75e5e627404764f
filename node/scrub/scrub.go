// Package scrub finds corruption on disk: it walks every sealed segment of
// the node's partitions at a bounded rate, and keeps what recovery cut into
// the quarantine, for the admin API's /v1/scrub.
package scrub

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/adminapi"
	"github.com/spool-log/spool/partition"
)

// What recovery cuts from a partition's log goes to
// DATA/quarantine/ and is logged at ERROR here (partition logs nothing
// itself), and a background scrubber walks every sealed segment at a bounded
// rate checking each batch's length, CRC-32C and offsets, so that damage
// appearing after a segment was written (a flipped bit, a bad sector) is
// found before a consumer trips on it. A batch found damaged is not served:
// a fetch starting at it gets KAFKA_STORAGE_ERROR (partition.Read says why),
// and every whole batch before it is still served. Findings are logged at
// ERROR once, counted in the spool_scrub_corrupt_batches metric (bytes read in
// spool_scrub_bytes), and listed at /v1/scrub (`spool scrub`). A scrub changes
// no byte. Findings are kept in a file (findings.go), so a restart lists
// them still and rechecks each damaged batch as its partition opens: the
// marks that keep fetches off it live in memory.

const (
	// DefaultRate is how many bytes per second the scrubber reads:
	// a terabyte in about three days, a trickle beside a disk's bandwidth.
	DefaultRate = 4 << 20
	// DefaultInterval is the time between the starts of two passes.
	DefaultInterval = 24 * time.Hour
	// firstScrubDelay bounds the wait for the first pass after a start, so
	// a node restarted more often than the interval still scrubs.
	firstScrubDelay = 5 * time.Minute
)

// Finding is a damaged batch (or recovery cut) in one partition, and
// Status what /v1/scrub reports: adminapi's, which the client reads.
type (
	Finding = adminapi.ScrubFinding
	Status  = adminapi.ScrubStatus
)

// Target is one partition to scrub.
type Target struct {
	Topic     string
	Partition int32
	Log       Scrubbable
}

// Scrubbable is the part of a partition's replica the scrubber uses: a
// paced CRC walk of its sealed segments, and what is known corrupt.
type Scrubbable interface {
	Scrub(pace func(n int64) error) (partition.ScrubResult, error)
	KnownCorrupt() []partition.Corruption
}

// Config is what a Scrubber needs.
type Config struct {
	// Rate bounds the reading, in bytes per second across all partitions;
	// 0 turns the scrubber off.
	Rate int64
	// Interval is the time between the starts of two passes.
	Interval time.Duration
	// Targets lists the partitions open now.
	Targets func() []Target
	// FindingsFile keeps the findings across restarts ("": in memory
	// only).
	FindingsFile string
	Metrics      *metrics.Metrics
	Log          logrus.FieldLogger
}

// Scrubber is the node's scrubber and its findings.
type Scrubber struct {
	cfg  Config
	kick chan struct{}

	// saveMu orders the writes of FindingsFile; mu is taken inside it
	// only to copy what is kept, never across the write.
	saveMu sync.Mutex

	mu          sync.Mutex
	running     bool
	passes      int
	start, end  time.Time
	bytes       int64
	corrupt     int
	found       map[string]time.Time // findings already logged, by scrubKey
	kept        map[string]Finding   // the damaged batches found, kept in FindingsFile, by scrubKey
	quarantined []Finding
	repairs     []Repair // repairs.go, oldest first
	// repairsStarted and repairsDone count since the node started.
	repairsStarted, repairsDone int
}

// New returns a scrubber; Run runs it.
func New(cfg Config) *Scrubber {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	cfg.Rate = max(cfg.Rate, 0)
	s := &Scrubber{cfg: cfg, kick: make(chan struct{}, 1), found: map[string]time.Time{}, kept: map[string]Finding{}}
	s.loadFindings()
	return s
}

func scrubKey(topic string, index int32, c partition.Corruption) string {
	return topic + "/" + strconv.Itoa(int(index)) + "/" + c.Segment + "/" + strconv.FormatInt(c.Position, 10)
}

// OnRecoveryCut returns the partition.Config.OnCorruption of one partition:
// recovery has kept the cut bytes in quarantine; say so at ERROR.
func (s *Scrubber) OnRecoveryCut(topic string, index int32) func(partition.Corruption) {
	return func(c partition.Corruption) {
		s.cfg.Log.WithFields(corruptionFields(topic, index, c)).Error("recovery cut damaged or unreachable bytes from the log and kept them in quarantine")
		s.mu.Lock()
		s.quarantined = append(s.quarantined, Finding{Topic: topic, Partition: index, FoundAt: time.Now().UTC(), Corruption: c})
		s.mu.Unlock()
		s.save()
	}
}

func corruptionFields(topic string, index int32, c partition.Corruption) logrus.Fields {
	f := logrus.Fields{
		"topic": topic, "partition": index, "segment": c.Segment, "position": c.Position,
		"offset": c.Offset, "end_offset": c.EndOffset, "bytes": c.Bytes, "reason": c.Reason,
	}
	if c.Quarantine != "" {
		f["quarantine"] = c.Quarantine
	}
	return f
}

// Run runs scrub passes until ctx ends. With a zero rate it returns at
// once, and the scrubber only reports what recovery cut.
func (s *Scrubber) Run(ctx context.Context) {
	if s.cfg.Rate <= 0 {
		return
	}
	interval := s.cfg.Interval
	t := time.NewTimer(min(interval, firstScrubDelay))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		s.pass(ctx)
		t.Reset(interval)
	}
}

var errScrubStopped = errors.New("node closing")

// ErrOff is Start's answer when the scrubber is off.
var ErrOff = errors.New("the scrubber is off (--scrub-rate 0)")

// Start asks for a pass now, beside the scheduled ones.
func (s *Scrubber) Start() error {
	if s.cfg.Rate <= 0 {
		return ErrOff
	}
	select {
	case s.kick <- struct{}{}:
	default: // a pass is already asked for
	}
	return nil
}

// pass scrubs every target once, at Rate across them.
func (s *Scrubber) pass(ctx context.Context) {
	start := time.Now()
	s.mu.Lock()
	s.running, s.start = true, start.UTC()
	s.mu.Unlock()
	// Bytes read are counted as the pass goes, a MiB at a time, so a pass
	// over a large partition shows progress in the metric and /v1/scrub.
	var paced, unflushed int64
	flush := func() {
		s.cfg.Metrics.IncrCounter([]string{"scrub", "bytes"}, float32(unflushed))
		s.mu.Lock()
		s.bytes += unflushed
		s.mu.Unlock()
		unflushed = 0
	}
	pace := func(b int64) error {
		paced += b
		if unflushed += b; unflushed >= 1<<20 {
			flush()
		}
		due := start.Add(time.Duration(float64(paced) / float64(s.cfg.Rate) * float64(time.Second)))
		if d := time.Until(due); d > 10*time.Millisecond {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return errScrubStopped
			case <-t.C:
			}
		}
		return nil
	}
	for _, p := range s.cfg.Targets() {
		res, err := p.Log.Scrub(pace)
		flush()
		if errors.Is(err, errScrubStopped) {
			break
		}
		if err != nil && !errors.Is(err, partition.ErrClosed) {
			s.cfg.Log.WithError(err).WithField("topic", p.Topic).WithField("partition", p.Partition).Error("scrub failed")
		}
		for _, c := range res.Corrupt {
			key := scrubKey(p.Topic, p.Partition, c)
			s.mu.Lock()
			_, seen := s.found[key]
			if !seen {
				now := time.Now().UTC()
				s.found[key] = now
				s.kept[key] = Finding{Topic: p.Topic, Partition: p.Partition, FoundAt: now, Corruption: c}
				s.corrupt++
			}
			s.mu.Unlock()
			if !seen {
				s.save()
				s.cfg.Metrics.IncrCounter([]string{"scrub", "corrupt_batches"}, 1)
				s.cfg.Log.WithFields(corruptionFields(p.Topic, p.Partition, c)).Error("scrub found a corrupt record batch; fetches of it now fail with KAFKA_STORAGE_ERROR")
			}
		}
	}
	s.mu.Lock()
	s.running, s.end = false, time.Now().UTC()
	s.passes++
	s.mu.Unlock()
}

// Status reports the scrubber's state and every damaged batch it found
// that is still in a local log.
func (s *Scrubber) Status() Status {
	st := Status{RateBytesPerSec: s.cfg.Rate, Interval: s.cfg.Interval.String(), Corrupt: []Finding{}}
	parts := s.cfg.Targets()
	slices.SortFunc(parts, func(a, b Target) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Running, st.Passes, st.LastPassStart, st.LastPassEnd = s.running, s.passes, s.start, s.end
	st.BytesScrubbed, st.CorruptBatches = s.bytes, s.corrupt
	st.Quarantined = []Finding{}
	kept := s.quarantined[:0]
	for _, q := range s.quarantined {
		// Purged (spool quarantine purge, or --quarantine-retention):
		// its path would name nothing.
		if _, err := os.Lstat(q.Quarantine); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		kept = append(kept, q)
		st.Quarantined = append(st.Quarantined, q)
	}
	s.quarantined = kept
	st.Repairs = slices.Clone(s.repairs)
	if st.Repairs == nil {
		st.Repairs = []Repair{}
	}
	st.RepairsStarted, st.RepairsDone = s.repairsStarted, s.repairsDone
	for _, p := range parts {
		for _, c := range p.Log.KnownCorrupt() {
			st.Corrupt = append(st.Corrupt, Finding{Topic: p.Topic, Partition: p.Partition, FoundAt: s.found[scrubKey(p.Topic, p.Partition, c)], Corruption: c})
		}
	}
	return st
}
