package node

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/partition"
)

// The log cleaner: one goroutine per node compacts the logs of compacted
// topics (cleanup.policy containing "compact"; __consumer_offsets is one),
// as Kafka's LogCleaner does with log.cleaner.threads=1. Each pass cleans,
// filthiest first, every local log whose dirty ratio reached its topic's
// min.cleanable.dirty.ratio or that holds tombstones past their delete
// horizon. The partition package does the cleaning; this file decides when.
// The codecs it recompresses with are internal/recordbatch/compression's,
// given to it in topicconfig.go.

const (
	// cleanerBackoff is how long the cleaner sleeps between passes
	// (log.cleaner.backoff.ms), unless the retention interval is shorter.
	cleanerBackoff = 15 * time.Second
	// cleanerMapBytes bounds the key map of one cleaning
	// (log.cleaner.dedupe.buffer.size, 128 MiB in Kafka across all threads).
	cleanerMapBytes = 64 << 20
)

// startCleaner starts the node's cleaner loop, one of n.loops: it stops
// when the node closes, before the partitions it cleans.
func (n *Node) startCleaner() {
	n.loops.Go(n.cleanerLoop)
}

func (n *Node) cleanerLoop(ctx context.Context) {
	t := time.NewTicker(min(cleanerBackoff, n.cfg.RetentionCheckInterval))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n.cleanLogs()
	}
}

// cleanLogs runs one cleaner pass and returns how many logs it cleaned. A
// pass forced beside the background one (tests) is safe: Log.Clean runs
// one cleaning at a time per log.
func (n *Node) cleanLogs() int {
	type candidate struct {
		p     *localPartition
		ratio float64
	}
	var cands []candidate
	for _, p := range n.parts.All() {
		if p.Replica.NeedsCleaning() {
			ratio, _ := p.Replica.DirtyRatio()
			cands = append(cands, candidate{p, ratio})
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].ratio > cands[j].ratio })
	cleaned := 0
	for _, c := range cands {
		if n.isClosing() {
			break
		}
		if n.cleanLog(c.p) {
			cleaned++
		}
	}
	return cleaned
}

// cleanLog cleans one partition's log up to its high watermark.
func (n *Node) cleanLog(p *localPartition) bool {
	log := n.log.WithFields(logrus.Fields{"topic": p.Topic, "partition": p.Index})
	start := time.Now()
	// Up to the replica's high watermark (the commit point), so no follower
	// is ever asked to keep what the leader cleaned away before it was
	// committed.
	st, err := p.Replica.Clean(cleanerMapBytes)
	switch {
	case errors.Is(err, partition.ErrCleanAborted) || errors.Is(err, partition.ErrClosed):
		log.WithError(err).Debug("log cleaning abandoned")
		return false
	case err != nil:
		log.WithError(err).Warn("log cleaning failed")
		n.metrics.IncrCounter([]string{"cleaner", "errors"}, 1)
		return false
	case st.Segments == 0:
		return false // the dirty segments are not yet flushed; the next pass gets them
	}
	n.metrics.IncrCounter([]string{"cleaner", "runs"}, 1)
	n.metrics.IncrCounter([]string{"cleaner", "bytes", "freed"}, float32(st.BytesBefore-st.BytesAfter))
	log.WithFields(logrus.Fields{
		"segments": st.Segments, "written": st.SegmentsWritten,
		"bytes_before": st.BytesBefore, "bytes_after": st.BytesAfter,
		"records": st.Records, "kept": st.RecordsKept, "tombstones_removed": st.TombstonesRemoved,
		"dirty_from": st.DirtyFrom, "dirty_to": st.DirtyTo, "took": time.Since(start),
	}).Info("cleaned log")
	return true
}
