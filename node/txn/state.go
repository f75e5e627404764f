package txn

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicName is the internal topic holding transaction state.
const TopicName = "__transaction_state"

// States, as Kafka numbers them in TxnMetadataValue.
const (
	Empty          = kmsg.TransactionState(0)
	Ongoing        = kmsg.TransactionState(1)
	PrepareCommit  = kmsg.TransactionState(2)
	PrepareAbort   = kmsg.TransactionState(3)
	CompleteCommit = kmsg.TransactionState(4)
	CompleteAbort  = kmsg.TransactionState(5)
	Dead           = kmsg.TransactionState(6)
)

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// txnMeta is one transactional id's state, as its last record says.
type txnMeta struct {
	id    string
	pid   int64
	epoch int16
	// lastEpoch is the producer's epoch before the coordinator bumped it
	// to abort a timed-out transaction (-1: none): that producer may
	// still re-initialise (KIP-588), as in Kafka. Kept in memory only.
	lastEpoch  int16
	timeout    time.Duration
	state      kmsg.TransactionState
	partitions map[TopicPartition]struct{}
	start      time.Time // when the transaction became Ongoing
	updated    time.Time
	// completing is set while markers are being written for a Prepare
	// state (one completion at a time); done closes when that attempt
	// ends, written or not.
	completing bool
	done       chan struct{}
}

func (m *txnMeta) clone() *txnMeta {
	c := *m
	c.done = nil
	c.partitions = make(map[TopicPartition]struct{}, len(m.partitions))
	for tp := range m.partitions {
		c.partitions[tp] = struct{}{}
	}
	return &c
}

// sortedPartitions lists the partitions by topic, then partition.
func (m *txnMeta) sortedPartitions() []TopicPartition {
	out := make([]TopicPartition, 0, len(m.partitions))
	for tp := range m.partitions {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// key and value are the record that stores m.
func (m *txnMeta) key() []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: m.id}
	return k.AppendTo(nil)
}

func (m *txnMeta) value() []byte {
	v := kmsg.TxnMetadataValue{
		Version:             0,
		ProducerID:          m.pid,
		ProducerEpoch:       m.epoch,
		TimeoutMillis:       int32(m.timeout / time.Millisecond),
		State:               m.state,
		LastUpdateTimestamp: m.updated.UnixMilli(),
		StartTimestamp:      -1,
	}
	if !m.start.IsZero() {
		v.StartTimestamp = m.start.UnixMilli()
	}
	var cur *kmsg.TxnMetadataValueTopic
	for _, tp := range m.sortedPartitions() {
		if cur == nil || cur.Topic != tp.Topic {
			v.Topics = append(v.Topics, kmsg.TxnMetadataValueTopic{Topic: tp.Topic})
			cur = &v.Topics[len(v.Topics)-1]
		}
		cur.Partitions = append(cur.Partitions, tp.Partition)
	}
	return v.AppendTo(nil)
}

// metaFrom rebuilds the state a record stored.
func metaFrom(id string, v *kmsg.TxnMetadataValue) *txnMeta {
	m := &txnMeta{
		id: id, pid: v.ProducerID, epoch: v.ProducerEpoch, lastEpoch: -1,
		timeout:    time.Duration(v.TimeoutMillis) * time.Millisecond,
		state:      v.State,
		partitions: make(map[TopicPartition]struct{}),
		updated:    time.UnixMilli(v.LastUpdateTimestamp),
	}
	if v.StartTimestamp >= 0 {
		m.start = time.UnixMilli(v.StartTimestamp)
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return m
}
