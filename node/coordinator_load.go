package node

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// partitionLoader is what the group and the transaction coordinators have
// in common for this node: the partitions of their internal topic it
// coordinates, each replayed from the log in the leader epoch it leads in.
type partitionLoader interface {
	Loaded(p, epoch int32) bool
	Load(p, epoch int32) error // replays p (a log scan); one in another epoch is replayed again
	Unload(p int32)
}

// partitionLoads makes each partition's replay one at a time, a partition
// apart from the others: a replay (a scan of the partition's log) holds up
// only the requests that need that partition, not every group or
// transaction of the node.
type partitionLoads struct {
	mu    sync.Mutex
	locks map[int32]*sync.Mutex
}

func (l *partitionLoads) of(p int32) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.locks == nil {
		l.locks = make(map[int32]*sync.Mutex)
	}
	m := l.locks[p]
	if m == nil {
		m = new(sync.Mutex)
		l.locks[p] = m
	}
	return m
}

// ensureCoordinatorPartition loads partition p of an internal topic into
// its coordinator if this node leads it (in the epoch it leads in: a new
// Raft leader replays only once everything its predecessors committed is
// below its high watermark), and unloads it if it no longer leads; it
// returns the code a client should see otherwise.
func (n *Node) ensureCoordinatorPartition(topic string, c partitionLoader, loads *partitionLoads, p int32, what string) int16 {
	lp, e := n.leaderPartition(topic, p)
	switch e {
	case nil:
	case kerr.NotLeaderForPartition:
		c.Unload(p)
		return kerr.NotCoordinator.Code
	default:
		return kerr.CoordinatorNotAvailable.Code
	}
	epoch, ok := lp.Replica.WritableEpoch()
	if !ok {
		return kerr.CoordinatorLoadInProgress.Code
	}
	if c.Loaded(p, epoch) {
		return 0
	}
	mu := loads.of(p)
	mu.Lock()
	defer mu.Unlock()
	if err := c.Load(p, epoch); err != nil {
		n.log.WithError(err).WithField("partition", p).Errorf("load %s", what)
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}
