// Package compaction is the node's log cleaner: one goroutine per node
// (Cleaner.Run, one of the node's background loops, so it stops before
// the partitions it cleans close) compacts the logs of compacted topics
// (cleanup.policy containing "compact"; __consumer_offsets is one), as
// Kafka's LogCleaner does with log.cleaner.threads=1. Each pass cleans,
// filthiest first, every local log whose dirty ratio reached its topic's
// min.cleanable.dirty.ratio or that holds tombstones past their delete
// horizon. The partition package does the cleaning; this package decides
// when. The codecs it recompresses with are internal/recordbatch/
// compression's, given to the logs by the node's topic configuration.
//
// It holds no lock of its own: a pass cleans one log at a time, each
// under that log's own cleaning lock (Log.Clean).
package compaction

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/node/hosted"
	"github.com/spool-log/spool/partition"
)

const (
	// cleanerBackoff is how long the cleaner sleeps between passes
	// (log.cleaner.backoff.ms), unless the retention interval is shorter.
	cleanerBackoff = 15 * time.Second
	// MapBytes bounds the key map of one cleaning
	// (log.cleaner.dedupe.buffer.size, 128 MiB in Kafka across all threads).
	MapBytes = 64 << 20
)

// Counters are the go-metrics counters the cleaner counts on.
type Counters interface {
	IncrCounter(key []string, val float32)
}

// Config is what the node hands its cleaner.
type Config struct {
	// Partitions are the partitions open here.
	Partitions func() []*hosted.Partition
	// Closing tells whether the node is stopping: a pass ends early.
	Closing func() bool
	// RetentionCheckInterval caps the time between passes.
	RetentionCheckInterval time.Duration
	Metrics                Counters
	Log                    logrus.FieldLogger
}

// Cleaner is the node's log cleaner.
type Cleaner struct{ cfg Config }

// New makes the cleaner; Run runs it.
func New(cfg Config) *Cleaner { return &Cleaner{cfg: cfg} }

// Run cleans a pass every backoff until ctx ends.
func (c *Cleaner) Run(ctx context.Context) {
	t := time.NewTicker(min(cleanerBackoff, c.cfg.RetentionCheckInterval))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.CleanLogs()
	}
}

// CleanLogs runs one cleaner pass and returns how many logs it cleaned. A
// pass forced beside the background one (tests) is safe: Log.Clean runs
// one cleaning at a time per log.
func (c *Cleaner) CleanLogs() int {
	type candidate struct {
		p     *hosted.Partition
		ratio float64
	}
	var cands []candidate
	for _, p := range c.cfg.Partitions() {
		if p.Replica.NeedsCleaning() {
			ratio, _ := p.Replica.DirtyRatio()
			cands = append(cands, candidate{p, ratio})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].ratio > cands[j].ratio })
	cleaned := 0
	for _, cand := range cands {
		if c.cfg.Closing() {
			break
		}
		if c.CleanLog(cand.p) {
			cleaned++
		}
	}
	return cleaned
}

// CleanLog cleans one partition's log up to its high watermark.
func (c *Cleaner) CleanLog(p *hosted.Partition) bool {
	log := c.cfg.Log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index})
	start := time.Now()
	// Up to the replica's high watermark (the commit point), so no follower
	// is ever asked to keep what the leader cleaned away before it was
	// committed.
	st, err := p.Replica.Clean(MapBytes)
	switch {
	case errors.Is(err, partition.ErrCleanAborted) || errors.Is(err, partition.ErrClosed):
		log.WithError(err).Debug("log cleaning abandoned")
		return false
	case err != nil:
		log.WithError(err).Warn("log cleaning failed")
		c.cfg.Metrics.IncrCounter([]string{"cleaner", "errors"}, 1)
		return false
	case st.Segments == 0:
		return false // the dirty segments are not yet flushed; the next pass gets them
	}
	c.cfg.Metrics.IncrCounter([]string{"cleaner", "runs"}, 1)
	c.cfg.Metrics.IncrCounter([]string{"cleaner", "bytes", "freed"}, float32(st.BytesBefore-st.BytesAfter))
	log.WithFields(logrus.Fields{
		"segments": st.Segments, "written": st.SegmentsWritten,
		"bytes_before": st.BytesBefore, "bytes_after": st.BytesAfter,
		"records": st.Records, "kept": st.RecordsKept, "tombstones_removed": st.TombstonesRemoved,
		"dirty_from": st.DirtyFrom, "dirty_to": st.DirtyTo, "took": time.Since(start),
	}).Info("cleaned log")
	return true
}
