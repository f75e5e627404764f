package node

import (
	"fmt"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Replication factors are odd (DESIGN.md). Each partition's replicas form
// a Raft group, which commits with a majority: a group of 2 needs both
// replicas and survives no failure, a group of 4 needs 3 and survives one,
// as a group of 3 does. An even factor is so never better than the odd one
// below it, and worse in one way: one more broker whose loss stops the
// partition. Kafka users expect R=2 to survive a failure (its in-sync set
// shrinks); with Raft it cannot, so:
//
//   - a factor an operator or client asks for (CreateTopics, CreatePartitions,
//     AlterPartitionReassignments and the CLI's moves and rebalance that use
//     it) must be odd, else INVALID_REPLICATION_FACTOR with evenFactorReason;
//   - a factor the cluster picks (--default-replication-factor for topics
//     created without one, --offsets-topic-replication-factor and the
//     transaction state's) is the largest odd number not above what was
//     configured and the brokers the roster knows (oddFactorAtMost): two
//     brokers give one copy, each partition on one of them;
//   - a catalog that already holds even-factor topics keeps serving them,
//     and says so: a warning at start (and whenever their number grows), the
//     gauge spool_topics_even_replication_factor (and
//     spool_partitions_even_replication_factor) at /metrics, and a note in
//     `spool topic describe`.

// oddFactorAtMost is the largest odd replication factor not above asked
// nor brokers, and at least 1.
func oddFactorAtMost(asked, brokers int) int16 {
	f := min(asked, brokers)
	if f%2 == 0 {
		f--
	}
	return int16(max(f, 1))
}

// evenFactorReason says why an even factor is refused.
func evenFactorReason(rf int) string {
	return fmt.Sprintf("replication factor %d is even: each partition's replicas form a Raft group, which needs a majority (%d of %d) to commit, so it survives no more failures than a factor of %d would (a group of 2 survives none); use an odd factor such as %d or %d",
		rf, rf/2+1, rf, rf-1, rf-1, rf+1)
}

// checkOddFactor refuses an even factor (rf >= 1 already checked).
func checkOddFactor(rf int) error {
	if rf%2 == 0 {
		return &topicError{kerr.InvalidReplicationFactor, evenFactorReason(rf)}
	}
	return nil
}

// defaultReplicationFactor is the factor of a topic created without one.
func (n *Node) defaultReplicationFactor() int16 {
	return n.clusterFactor(int(n.cfg.DefaultReplicationFactor))
}

// clusterFactor is the factor of a topic whose factor the cluster picks
// from a configured one: capped by the roster rather than by the brokers
// alive now, so that every node creating the topic concurrently makes the
// same spec (node/coord: Host.Get).
func (n *Node) clusterFactor(configured int) int16 {
	return oddFactorAtMost(configured, len(n.agent.Roster()))
}

// warnEvenConfig says, at start, that a configured even factor is
// lowered: the operator asked for a fault tolerance it would not give.
func (n *Node) warnEvenConfig() {
	for _, c := range []struct {
		flag string
		rf   int16
	}{
		{"--default-replication-factor", n.cfg.DefaultReplicationFactor},
		{"--offsets-topic-replication-factor", n.cfg.Groups.OffsetsTopicReplicationFactor},
	} {
		if c.rf > 0 && c.rf%2 == 0 {
			n.log.WithFields(logrus.Fields{"flag": c.flag, "replication_factor": c.rf, "at_most": c.rf - 1}).
				Warn("an even replication factor survives no more failures than the odd one below it (a Raft group of 2 survives none): topics get the largest odd factor not above it and the brokers known")
		}
	}
}

// evenFactorCount is how many topics (and partitions) of topics have an
// even replication factor.
func evenFactorCount(topics []TopicSpec) (evenTopics, evenPartitions int, names []string) {
	for _, t := range topics {
		if t.ReplicationFactor%2 == 0 {
			evenTopics++
			evenPartitions += int(t.Partitions)
			names = append(names, t.Name)
		}
	}
	return evenTopics, evenPartitions, names
}

// checkEvenFactors sets the even-factor gauges and warns when the count
// of even-factor topics is above what it last warned of (at start, the
// first flush, every topic the catalog held).
func (n *Node) checkEvenFactors() {
	if n.agent == nil {
		return
	}
	topics, partitions, names := evenFactorCount(n.catalog.Topics())
	n.metrics.SetGauge([]string{"topics", "even_replication_factor"}, float32(topics))
	n.metrics.SetGauge([]string{"partitions", "even_replication_factor"}, float32(partitions))
	if int64(topics) > n.evenFactorWarned.Swap(int64(topics)) {
		n.log.WithFields(logrus.Fields{"topics": names, "partitions": partitions}).
			Warn("topics with an even replication factor: still served, but a Raft group of 2 needs both replicas (of 4, three), so each of their partitions stops when one of its replicas fails, as with one copy fewer; create odd-factor topics and move their data there")
	}
}
