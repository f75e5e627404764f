package coord

import (
	"errors"
	"sync"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Loader is what the coordinators have in common for this node: the
// partitions of their internal topic it coordinates, each replayed from the
// log in the leader epoch it leads in.
type Loader interface {
	Loaded(p, epoch int32) bool
	Load(p, epoch int32) error // replays p (a log scan); one in another epoch is replayed again
	Unload(p int32)
}

// partitionLoads makes each partition's replay one at a time, a partition
// apart from the others: a replay (a scan of the partition's log) holds up
// only the requests that need that partition, not every group or
// transaction of the node.
type partitionLoads struct {
	mu    sync.Mutex // a leaf: only guards locks
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

// ensure loads partition p of an internal topic into its coordinator if
// this node leads it (in the epoch it leads in: a new Raft leader replays
// only once everything its predecessors committed is below its high
// watermark), and unloads it if it no longer leads; it returns the error a
// client should see otherwise: NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE
// or COORDINATOR_LOAD_IN_PROGRESS.
func ensure(b Broker, log logrus.FieldLogger, topic string, c Loader, loads *partitionLoads, p int32, what string) error {
	lp, e := b.Leader(topic, p)
	switch e {
	case nil:
	case kerr.NotLeaderForPartition:
		c.Unload(p)
		return kerr.NotCoordinator
	default:
		return kerr.CoordinatorNotAvailable
	}
	epoch, ok := lp.Replica.WritableEpoch()
	if !ok {
		return kerr.CoordinatorLoadInProgress
	}
	if c.Loaded(p, epoch) {
		return nil
	}
	mu := loads.of(p)
	mu.Lock()
	defer mu.Unlock()
	if err := c.Load(p, epoch); err != nil {
		log.WithError(err).WithField("partition", p).Errorf("load %s", what)
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

// Code is err's Kafka error code for a client: 0 for nil, the code of a
// kerr error, else COORDINATOR_NOT_AVAILABLE.
func Code(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}
