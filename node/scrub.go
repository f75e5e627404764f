package node

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/partition"
)

// Corruption on disk: what recovery cuts from a partition's log goes to
// DATA/quarantine/ and is logged at ERROR here (partition logs nothing
// itself), and a background scrubber walks every sealed segment at a bounded
// rate checking each batch's length, CRC-32C and offsets, so that damage
// appearing after a segment was written (a flipped bit, a bad sector) is
// found before a consumer trips on it. A batch found damaged is not served:
// a fetch starting at it gets KAFKA_STORAGE_ERROR (partition.Read says why),
// and every whole batch before it is still served. Findings are logged at
// ERROR once, counted in the spool_scrub_corrupt_batches metric (bytes read in
// spool_scrub_bytes), and listed at /v1/scrub (`spool scrub`). A scrub changes
// no byte; marks live in memory, so a restart forgets them until the next
// pass finds the damage again.

const (
	// DefaultScrubRate is how many bytes per second the scrubber reads:
	// a terabyte in about three days, a trickle beside a disk's bandwidth.
	DefaultScrubRate = 4 << 20
	// DefaultScrubInterval is the time between the starts of two passes.
	DefaultScrubInterval = 24 * time.Hour
	// firstScrubDelay bounds the wait for the first pass after a start, so
	// a node restarted more often than the interval still scrubs.
	firstScrubDelay = 5 * time.Minute
)

// ScrubFinding is a damaged batch (or recovery cut) in one partition.
type ScrubFinding struct {
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	FoundAt   time.Time `json:"found_at"`
	partition.Corruption
}

// ScrubStatus is what /v1/scrub reports.
type ScrubStatus struct {
	// RateBytesPerSec is the configured rate; 0 means the scrubber is off.
	RateBytesPerSec int64     `json:"rate_bytes_per_sec"`
	Interval        string    `json:"interval"`
	Running         bool      `json:"running"`
	Passes          int       `json:"passes"`
	LastPassStart   time.Time `json:"last_pass_start,omitzero"`
	LastPassEnd     time.Time `json:"last_pass_end,omitzero"`
	// BytesScrubbed and CorruptBatches count since the node started.
	BytesScrubbed  int64 `json:"bytes_scrubbed"`
	CorruptBatches int   `json:"corrupt_batches"`
	// Corrupt is the damaged batches still in the logs, which fetches refuse.
	Corrupt []ScrubFinding `json:"corrupt"`
	// Quarantined is what recovery cut from logs into DATA/quarantine since
	// the node started, and is still there (not yet purged or reclaimed).
	Quarantined []ScrubFinding `json:"quarantined"`
}

// scrubState is the node's scrubber bookkeeping.
type scrubState struct {
	kick chan struct{}

	mu          sync.Mutex
	running     bool
	passes      int
	start, end  time.Time
	bytes       int64
	corrupt     int
	found       map[string]time.Time // findings already logged, by scrubKey
	quarantined []ScrubFinding
}

func scrubKey(topic string, index int32, c partition.Corruption) string {
	return topic + "/" + strconv.Itoa(int(index)) + "/" + c.Segment + "/" + strconv.FormatInt(c.Position, 10)
}

// onRecoveryCut returns the partition.Config.OnCorruption of one partition:
// recovery has kept the cut bytes in quarantine; say so at ERROR.
func (n *Node) onRecoveryCut(topic string, index int32) func(partition.Corruption) {
	return func(c partition.Corruption) {
		n.log.WithFields(corruptionFields(topic, index, c)).Error("recovery cut damaged or unreachable bytes from the log and kept them in quarantine")
		n.scrub.mu.Lock()
		n.scrub.quarantined = append(n.scrub.quarantined, ScrubFinding{Topic: topic, Partition: index, FoundAt: time.Now().UTC(), Corruption: c})
		n.scrub.mu.Unlock()
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

// startScrubber starts the scrubber goroutine (joining n.loops); it stops
// when the node closes. With a zero rate it only answers /v1/scrub.
func (n *Node) startScrubber() {
	if n.cfg.ScrubRate <= 0 {
		return
	}
	n.loops.Add(1)
	go n.scrubLoop()
}

func (n *Node) scrubLoop() {
	defer n.loops.Done()
	interval := n.cfg.ScrubInterval
	if interval <= 0 {
		interval = DefaultScrubInterval
	}
	t := time.NewTimer(min(interval, firstScrubDelay))
	defer t.Stop()
	for {
		select {
		case <-n.closing:
			return
		case <-t.C:
		case <-n.scrub.kick:
		}
		n.scrubPass()
		t.Reset(interval)
	}
}

var errScrubStopped = errors.New("node closing")

// scrubPass scrubs every local partition once, at ScrubRate across them.
func (n *Node) scrubPass() {
	s := &n.scrub
	start := time.Now()
	s.mu.Lock()
	s.running, s.start = true, start.UTC()
	s.mu.Unlock()
	// Bytes read are counted as the pass goes, a MiB at a time, so a pass
	// over a large partition shows progress in the metric and /v1/scrub.
	var paced, unflushed int64
	flush := func() {
		n.metrics.IncrCounter([]string{"scrub", "bytes"}, float32(unflushed))
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
		due := start.Add(time.Duration(float64(paced) / float64(n.cfg.ScrubRate) * float64(time.Second)))
		if d := time.Until(due); d > 10*time.Millisecond {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-n.closing:
				return errScrubStopped
			case <-t.C:
			}
		}
		return nil
	}
	for _, p := range n.localPartitions() {
		res, err := p.replica.Scrub(pace)
		flush()
		if errors.Is(err, errScrubStopped) {
			break
		}
		if err != nil && !errors.Is(err, partition.ErrClosed) {
			n.log.WithError(err).WithField("topic", p.topic).WithField("partition", p.index).Error("scrub failed")
		}
		for _, c := range res.Corrupt {
			key := scrubKey(p.topic, p.index, c)
			s.mu.Lock()
			_, seen := s.found[key]
			if !seen {
				if s.found == nil {
					s.found = make(map[string]time.Time)
				}
				s.found[key] = time.Now().UTC()
				s.corrupt++
			}
			s.mu.Unlock()
			if !seen {
				n.metrics.IncrCounter([]string{"scrub", "corrupt_batches"}, 1)
				n.log.WithFields(corruptionFields(p.topic, p.index, c)).Error("scrub found a corrupt record batch; fetches of it now fail with KAFKA_STORAGE_ERROR")
			}
		}
	}
	s.mu.Lock()
	s.running, s.end = false, time.Now().UTC()
	s.passes++
	s.mu.Unlock()
}

// ScrubStatus reports the scrubber's state and every damaged batch it found
// that is still in a local log.
func (n *Node) ScrubStatus() ScrubStatus {
	interval := n.cfg.ScrubInterval
	if interval <= 0 {
		interval = DefaultScrubInterval
	}
	st := ScrubStatus{RateBytesPerSec: max(n.cfg.ScrubRate, 0), Interval: interval.String(), Corrupt: []ScrubFinding{}}
	parts := n.localPartitions()
	slices.SortFunc(parts, func(a, b *localPartition) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return int(a.index - b.index)
	})
	s := &n.scrub
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Running, st.Passes, st.LastPassStart, st.LastPassEnd = s.running, s.passes, s.start, s.end
	st.BytesScrubbed, st.CorruptBatches = s.bytes, s.corrupt
	st.Quarantined = []ScrubFinding{}
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
	for _, p := range parts {
		for _, c := range p.replica.KnownCorrupt() {
			st.Corrupt = append(st.Corrupt, ScrubFinding{Topic: p.topic, Partition: p.index, FoundAt: s.found[scrubKey(p.topic, p.index, c)], Corruption: c})
		}
	}
	return st
}

// scrubAdminRoutes serves /v1/scrub: GET the status, POST to start a pass
// now (409 when the scrubber is off).
func (n *Node) scrubAdminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("/v1/scrub", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, n.ScrubStatus())
		case http.MethodPost:
			if n.cfg.ScrubRate <= 0 {
				http.Error(w, "the scrubber is off (--scrub-rate 0)", http.StatusConflict)
				return
			}
			select {
			case n.scrub.kick <- struct{}{}:
			default: // a pass is already asked for
			}
			// The pass starts in the background; the reply is the status
			// as it stands, for a client that polls until passes grows.
			writeJSON(w, n.ScrubStatus())
		default:
			http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
		}
	})
}
