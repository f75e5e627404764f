package node

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/spool-log/spool/node/replica"
)

// Replication metrics, sampled from this node's replicas once a second on
// the node's background lifetime (n.loops), as go-metrics gauges and
// counters, which /metrics serves in Prometheus form:
//
//	spool_partitions_led                          replicas here that lead their partition
//	spool_replication_under_replicated_partitions led here, ISR smaller than the replicas
//	spool_replication_offline_partitions          hosted here, no leader known to the replica
//	spool_replication_quiesced_replicas           replicas here whose Raft group sleeps (idle:
//	                                              no ticks, no heartbeats; node/replica/quiesce.go)
//	spool_replication_replicas_catching_up        followers here not yet caught up with
//	                                              their leader's commit point since they opened
//	spool_replication_stopped_replicas            replicas here whose Raft group stopped on a
//	                                              write error, until reopened (node/hosted/mend.go)
//	spool_replication_leader_elections_won        leaderships taken here: a replica seen
//	                                              leading in a new leader epoch (sampled, so a
//	                                              leadership shorter than a second may be missed)
//	spool_replication_learner_bytes_sent          bytes of entries leaders here sent to learners
//	                                              under the copy throttle (the catch-up after
//	                                              a new replica's snapshot; node/replica/
//	                                              learner_throttle.go)
//	spool_replication_learner_bytes_held          bytes of such entries the throttle held back,
//	                                              to be sent again (counted each time)
//	spool_replication_transport_*                 the Raft transport's own counters (bytes_sent,
//	                                              bytes_received, msgs_*, dropped, reconnects)
//
// Commit latency is a Prometheus histogram, for the reason request latency
// is one (node/admin/metrics.go): spool_replication_commit_seconds, from
// an acks=all batch's append to its commit, labelled replicated="true"
// (a Raft group) or "false" (a single copy, where it is the append).

// replicationSample is how often the gauges are sampled.
const replicationSample = time.Second

// commitLatencyBuckets: a Raft round on loopback with an fsync on each
// replica (hundreds of microseconds to milliseconds) up to a request's
// timeout.
var commitLatencyBuckets = prometheus.ExponentialBuckets(100e-6, 2, 18) // 100 µs .. ~13 s

// replicationTracker holds what the replication metrics and /readyz need
// beyond what a replica answers: the leader's commit point as this node's
// followers last heard it, and per replica whether it has caught up.
type replicationTracker struct {
	commit  [2]prometheus.Observer // single copy, replicated
	startup time.Time              // when the node's startup replicas opened
	elected float32                // elections counted, not yet flushed; under mu
	// learnerSent and learnerHeld are the driver's LearnerBytes as last
	// counted; under mu.
	learnerSent, learnerHeld int64
	mu                       sync.Mutex
	replicas                 map[*replica.Replica]*replicaTrack
}

// replicaTrack is one local replica as the tracker last saw it.
type replicaTrack struct {
	opened time.Time
	// startup: open when the node started; only these hold readiness
	// (replication_readiness.go).
	startup bool
	// caughtUp is sticky: the replica's applied index reached its
	// leader's commit point once since it opened (or it led).
	caughtUp bool
	// ledEpoch is the last leader epoch this replica was seen leading in.
	ledEpoch int32
	// behind is the catch-up gap at the last check, for /readyz's reason.
	applied, target uint64
}

func newReplicationTracker(reg prometheus.Registerer) (*replicationTracker, error) {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "spool_replication_commit_seconds",
		Help:    "Time from an acks=all batch's append to its commit on the leader; replicated=false is a single copy.",
		Buckets: commitLatencyBuckets,
	}, []string{"replicated"})
	if err := reg.Register(vec); err != nil {
		return nil, err
	}
	return &replicationTracker{
		commit:   [2]prometheus.Observer{vec.WithLabelValues("false"), vec.WithLabelValues("true")},
		replicas: map[*replica.Replica]*replicaTrack{},
	}, nil
}

// observeCommit records an acks=all batch committed since start.
func (t *replicationTracker) observeCommit(replicated bool, start time.Time) {
	i := 0
	if replicated {
		i = 1
	}
	t.commit[i].Observe(time.Since(start).Seconds())
}

// startReplicationMetrics marks the replicas open now as the startup ones
// and samples every replicationSample until the node stops.
func (n *Node) startReplicationMetrics() {
	t := n.repl
	t.mu.Lock()
	t.startup = time.Now()
	for _, p := range n.parts.All() {
		t.trackLocked(p.Replica, t.startup).startup = true
	}
	t.mu.Unlock()
	n.loops.Every(replicationSample, n.sampleReplication)
}

// trackLocked is r's track, made on first sight.
func (t *replicationTracker) trackLocked(r *replica.Replica, now time.Time) *replicaTrack {
	tr, ok := t.replicas[r]
	if !ok {
		tr = &replicaTrack{opened: now, ledEpoch: -1}
		t.replicas[r] = tr
	}
	return tr
}

// sampleReplication sets the replication gauges and counts elections won.
func (n *Node) sampleReplication() {
	t := n.repl
	now := time.Now()
	parts := n.parts.All()
	var led, under, offline, catching, quiesced int
	t.mu.Lock()
	seen := make(map[*replica.Replica]bool, len(parts))
	for _, p := range parts {
		r := p.Replica
		seen[r] = true
		tr := t.trackLocked(r, now)
		if r.Asleep() {
			quiesced++
		}
		st := r.State()
		switch {
		case st.Leader < 0:
			offline++
		case st.Leader == n.cfg.NodeID:
			led++
			if len(st.ISR) < len(r.Replicas()) {
				under++
			}
			if st.LeaderEpoch >= 0 && st.LeaderEpoch != tr.ledEpoch {
				tr.ledEpoch = st.LeaderEpoch
				t.elected++
			}
		}
		if n.checkCaughtUpLocked(p, tr, st.Leader) == catchingUp {
			catching++
		}
	}
	for r := range t.replicas {
		if !seen[r] {
			delete(t.replicas, r)
		}
	}
	elected := t.elected
	t.elected = 0
	var sent, held int64
	if n.raft != nil {
		sent, held = n.raft.LearnerBytes()
	}
	sentNew, heldNew := sent-t.learnerSent, held-t.learnerHeld
	t.learnerSent, t.learnerHeld = sent, held
	t.mu.Unlock()
	n.metrics.SetGauge([]string{"partitions", "led"}, float32(led))
	n.metrics.SetGauge([]string{"replication", "under_replicated_partitions"}, float32(under))
	n.metrics.SetGauge([]string{"replication", "offline_partitions"}, float32(offline))
	n.metrics.SetGauge([]string{"replication", "replicas_catching_up"}, float32(catching))
	n.metrics.SetGauge([]string{"replication", "quiesced_replicas"}, float32(quiesced))
	// Incremented every sample, by zero too, so the counter is on
	// /metrics from the start.
	n.metrics.IncrCounter([]string{"replication", "leader_elections_won"}, elected)
	n.metrics.IncrCounter([]string{"replication", "learner_bytes_sent"}, float32(sentNew))
	n.metrics.IncrCounter([]string{"replication", "learner_bytes_held"}, float32(heldNew))
}
