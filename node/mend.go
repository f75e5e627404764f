package node

import (
	"time"

	"github.com/sirupsen/logrus"
)

// Mending: a replica whose Raft group stopped on a write its disk refused
// (a full disk: ENOSPC; an I/O error) is closed and opened again from disk,
// as a restart of the node would, but for that partition alone and without
// an operator: the open walks the log and cuts what a failed write left,
// and the group rejoins from its durable state, then catches up from its
// leader. Kafka takes a failed log directory back only on a restart; a
// full disk here mends itself once space is back. Until then the reopen
// fails (or the group stops again) and is tried again every mendInterval;
// the replica is reported meanwhile (/readyz, the
// spool_replication_stopped_replicas gauge, a log line per attempt).

// mendInterval is how often stopped replicas are looked for, and how long
// one stays stopped before a reopen is tried.
const mendInterval = 5 * time.Second

// mendStopped reopens every local replica whose group stopped, and opens
// again any partition of this node a failed reopen left closed.
func (n *Node) mendStopped() {
	stopped := 0
	var mend []*localPartition
	now := time.Now()
	n.mendMu.Lock()
	// Rebuilt each pass, so a partition dropped while stopped is forgotten.
	since := make(map[*localPartition]time.Time, len(n.stoppedSince))
	for _, p := range n.localPartitions() {
		if p.replica.Stopped() == nil {
			continue
		}
		stopped++
		first, seen := n.stoppedSince[p]
		if !seen {
			first = now
		}
		since[p] = first
		if now.Sub(first) >= mendInterval {
			mend = append(mend, p)
		}
	}
	n.stoppedSince = since
	n.mendMu.Unlock()
	n.metrics.SetGauge([]string{"replication", "stopped_replicas"}, float32(stopped))
	if len(mend) == 0 && !n.partitionsMissing.Load() {
		return
	}
	n.mending.Store(int64(len(mend)))
	defer n.mending.Store(0)
	n.reconcileMu.Lock()
	for _, p := range mend {
		log := n.log.WithFields(logrus.Fields{"topic": p.topic, "partition": p.index})
		log.WithError(p.replica.Stopped()).Warn("replica stopped on a write error: reopening it from disk")
		n.mu.Lock()
		if n.parts[tp{p.topic, p.index}] == p {
			delete(n.parts, tp{p.topic, p.index})
		}
		n.mu.Unlock()
		if err := p.replica.Close(); err != nil {
			log.WithError(err).Warn("closing the stopped replica")
		}
		n.mendMu.Lock()
		delete(n.stoppedSince, p)
		n.mendMu.Unlock()
	}
	n.reconcileMu.Unlock()
	// Opens what was just closed, and what an earlier failed open left out.
	if err := n.reconcile(); err != nil {
		n.partitionsMissing.Store(true)
		n.log.WithError(err).Warn("reopening stopped replicas failed; trying again later")
		return
	}
	n.partitionsMissing.Store(false)
	for _, p := range mend {
		n.log.WithFields(logrus.Fields{"topic": p.topic, "partition": p.index}).Info("stopped replica reopened")
	}
}

// stoppedReplicas counts the local replicas whose group is stopped, or
// that are being reopened.
func (n *Node) stoppedReplicas() int {
	c := int(n.mending.Load())
	for _, p := range n.localPartitions() {
		if p.replica.Stopped() != nil {
			c++
		}
	}
	return c
}
