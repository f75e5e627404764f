package coord

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/node/topics"
)

// shareStatePartitions is __share_group_state's partition count (Kafka's
// share.coordinator.state.topic.num.partitions is 50; the load here is a
// snapshot per acknowledgement, small and compacted).
const shareStatePartitions = 8

// newShares wires node/share: its state store hosted like the other
// coordinators (__share_group_state as __consumer_offsets: every node
// derives the same spec), made on first use and never closed.
func newShares(b Broker, cfg Config, groups *Groups) *share.Node {
	state := &Host[*share.Store]{
		b: b, log: cfg.Log, what: "share state",
		topic: InternalTopic{Name: share.StateTopic, Partitions: shareStatePartitions, ReplicationFactor: int(cfg.OffsetsTopicReplicationFactor), Configs: internalTopicConfigs},
		make: func() (*share.Store, error) {
			t, ok := b.Topic(share.StateTopic)
			if !ok {
				return nil, errNotInCatalog(share.StateTopic)
			}
			return share.NewStore(internalLog{b, share.StateTopic}, t.Partitions), nil
		},
		loader: func(st *share.Store) Loader { return st },
	}
	return share.NewNode(shareBroker{b}, otherGroups{groups}, state, admin.SharePath, cfg.Log)
}

// shareBroker is the Broker as node/share asks it.
type shareBroker struct{ Broker }

func (b shareBroker) Topic(name string) (share.TopicInfo, bool) {
	t, ok := b.Broker.Topic(name)
	return share.TopicInfo{ID: t.ID, Partitions: t.Partitions}, ok
}

func (b shareBroker) Internal(name string) bool { return topics.IsInternal(name) }

func (b shareBroker) Led(topic string, p int32) (share.Log, *kerr.Error) {
	lp, e := b.Leader(topic, p)
	if e != nil {
		return nil, e
	}
	return ShareLog(lp), nil
}

// otherGroups is the group coordinator as node/share asks it.
type otherGroups struct{ g *Groups }

func (o otherGroups) Lookup(id string) (bool, int16) {
	c, code := o.g.For(id)
	if code != 0 {
		return false, code
	}
	return c.Exists(id), 0
}
