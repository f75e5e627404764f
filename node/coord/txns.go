package coord

import (
	"time"

	"github.com/sirupsen/logrus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/spool-log/spool/node/txn"
)

// Txns is the transaction coordinator (node/txn) on this node, hosted as
// Groups hosts the group coordinator: __transaction_state is an ordinary
// replicated topic of the catalog, created on the first transactional
// request with replication factor 3, or the largest odd number below it not
// above the roster, and this node coordinates the transactional ids of each
// of its partitions that it leads, loaded (replayed) per leader epoch.
//
// Markers go to each partition's leader: written here when this node leads
// the partition, else posted to the leader's admin listener
// (txn_markers.go).
type Txns struct {
	b       Broker
	log     logrus.FieldLogger
	groups  *Groups
	host    Host[*txn.Coordinator]
	metrics txnMetrics
}

// transactionStatePartitions is transaction.state.log.num.partitions (50
// in Kafka; fewer here, as each partition is a Raft group).
const transactionStatePartitions = 16

// TransactionStatePartitions is the partition count __transaction_state
// is created with, for tests that find a transactional id's coordinator.
const TransactionStatePartitions = transactionStatePartitions

// transactionStateReplication is transaction.state.log.replication.factor,
// capped by the roster.
const transactionStateReplication = 3

// LoadInterval is how often a node looks for __transaction_state
// partitions it has come to lead (LoadLed).
const LoadInterval = time.Second

func newTxns(b Broker, cfg Config, groups *Groups) *Txns {
	t := &Txns{b: b, log: cfg.Log, groups: groups}
	t.host = Host[*txn.Coordinator]{
		b: b, log: cfg.Log, what: "transactions",
		topic: InternalTopic{Name: txn.TopicName, Partitions: transactionStatePartitions, ReplicationFactor: transactionStateReplication, Configs: internalTopicConfigs},
		// Transactions that commit offsets need __consumer_offsets too.
		needs: func() error { _, err := groups.Get(); return err },
		make: func() (*txn.Coordinator, error) {
			return txn.New(t.config(cfg), internalLog{b, txn.TopicName}, markerWriter{t})
		},
		close:  (*txn.Coordinator).Close,
		loader: func(c *txn.Coordinator) Loader { return c },
	}
	return t
}

func (t *Txns) config(cfg Config) txn.Config {
	parts := int32(transactionStatePartitions)
	if spec, ok := t.b.Topic(txn.TopicName); ok {
		parts = spec.Partitions
	}
	return txn.Config{
		Partitions:    parts,
		MaxTimeout:    15 * time.Minute,
		AbortInterval: cfg.TxnAbortInterval,
		AllocateID:    cfg.ProducerIDs.Allocate,
		PartitionCount: func(topic string) (int32, bool) {
			spec, ok := t.b.Topic(topic)
			return spec.Partitions, ok
		},
		GroupPartitions: t.groups.Partitions,
		Logger:          t.log,
		OnEnd:           t.metrics.onEnd,
	}
}

// Get returns the transaction coordinator, creating it (and
// __transaction_state) on first use.
func (t *Txns) Get() (*txn.Coordinator, error) { return t.host.Get() }

// Ensure loads partition p of __transaction_state if this node leads it,
// and unloads it if it no longer does.
func (t *Txns) Ensure(c *txn.Coordinator, p int32) error { return t.host.Ensure(c, p) }

// For returns the coordinator if this node coordinates txnID, its
// partition loaded in the current leader epoch, or the code the client
// should see.
func (t *Txns) For(txnID string) (*txn.Coordinator, int16) {
	if txnID == "" {
		return nil, kerr.InvalidRequest.Code
	}
	c, err := t.Get()
	if err != nil {
		t.log.WithError(err).Warn("transaction coordinator unavailable")
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	return c, Code(t.Ensure(c, c.Partition(txnID)))
}

// LoadLed loads every __transaction_state partition this node leads and
// has not loaded in its current epoch: a coordinator that took over must
// finish the markers of transactions left prepared, and abort timed-out
// ones, whether or not any client asks it anything. The node runs it every
// LoadInterval.
func (t *Txns) LoadLed() {
	spec, ok := t.b.Topic(txn.TopicName)
	if !ok || t.b.Closing() {
		return
	}
	var led []int32
	leads := make(map[int32]bool)
	for p := range spec.Partitions {
		if lp := t.b.Hosted(txn.TopicName, p); lp != nil {
			if _, ok := lp.Replica.WritableEpoch(); ok {
				led = append(led, p)
				leads[p] = true
			}
		}
	}
	// A deposed coordinator stops (its marker loops with it): the new
	// leader's coordinator finishes what it held.
	if c, ok := t.host.Current(); ok {
		for _, p := range c.LoadedPartitions() {
			if !leads[p] {
				c.Unload(p)
			}
		}
	}
	if len(led) == 0 {
		return
	}
	c, err := t.Get()
	if err != nil {
		return
	}
	for _, p := range led {
		_ = t.Ensure(c, p) // an error is the next pass's to retry
	}
}

// groupsCompleteTxn tells the group coordinator, if made, that a marker
// ended producerID's transaction on __consumer_offsets partition p: its
// pending transactional offsets commit or go.
func (t *Txns) groupsCompleteTxn(p int32, mk txn.Marker) {
	if c, ok := t.groups.Current(); ok {
		c.CompleteTxn(p, mk.ProducerID, mk.Epoch, mk.Commit)
	}
}
