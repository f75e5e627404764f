package coord

import (
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/node/group"
	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/node/txn"
)

// Config is how the node configures its coordinators.
type Config struct {
	Log logrus.FieldLogger
	// Group is the group coordinator's configuration; Partitions is the
	// count __consumer_offsets is created with. The catalog's hooks are
	// filled in here.
	Group group.Config
	// OffsetsTopicReplicationFactor is the configured factor of
	// __consumer_offsets and __share_group_state.
	OffsetsTopicReplicationFactor int16
	// TxnAbortInterval is how often timed-out transactions are looked for.
	TxnAbortInterval time.Duration
	// ProducerIDs hands out the node's producer ids.
	ProducerIDs *txn.ProducerIDs
}

// Coordinators are the coordinators this node hosts.
type Coordinators struct {
	// ProducerIDs hands out producer ids, to idempotent producers
	// (InitProducerID) and to transactional ones through Txns.
	ProducerIDs *txn.ProducerIDs
	Groups      *Groups
	Txns        *Txns
	Shares      *share.Node
}

// New wires the coordinators over b; each is made on first use.
func New(b Broker, cfg Config) *Coordinators {
	groups := newGroups(b, cfg)
	return &Coordinators{
		ProducerIDs: cfg.ProducerIDs,
		Groups:      groups,
		Txns:        newTxns(b, cfg, groups),
		Shares:      newShares(b, cfg, groups),
	}
}

func errNotInCatalog(topic string) error { return fmt.Errorf("%s not in the catalog yet", topic) }
