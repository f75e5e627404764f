package hosted

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-metrics"
	"github.com/sirupsen/logrus"

	"github.com/spool-log/spool/internal/recordbatch/compression"
	"github.com/spool-log/spool/node/scrub"
	"github.com/spool-log/spool/node/topicconfig"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/partition"
	"github.com/spool-log/spool/wire"
)

// What the node runs over every open partition, beside their requests.

// TxnCheckpointInterval is how often due txn-index checkpoints are
// written (and at shutdown), off the fetch path.
const TxnCheckpointInterval = 5 * time.Second

// FollowCatalog opens and closes partitions when the catalog changes from
// elsewhere (changes: the catalog's signal, from gossip), gives the open
// ones their topic's current configs, then calls after, until ctx ends.
func (h *Host) FollowCatalog(ctx context.Context, changes <-chan struct{}, after func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
		}
		if err := h.Reconcile(""); err != nil {
			h.cfg.Log.WithError(err).Error("applying catalog change")
		}
		h.ApplyConfigs()
		after()
	}
}

// ApplyConfigs gives every open partition its topic's current configs,
// after a local alteration or one gossip brought (FollowCatalog).
func (h *Host) ApplyConfigs() {
	type looked struct {
		spec topics.Spec
		ok   bool
	}
	specs := make(map[string]looked) // one copy of each topic, not one per partition
	for _, p := range h.All() {
		l, seen := specs[p.Topic]
		if !seen {
			l.spec, l.ok = h.cfg.Catalog().Topic(p.Topic)
			specs[p.Topic] = l
		}
		spec, ok := l.spec, l.ok
		if !ok || spec.ID != p.TopicID {
			continue // reconcile closes it
		}
		s, err := topicconfig.Parse(h.cfg.Topic, spec.Configs)
		if err != nil {
			h.cfg.Log.WithError(err).WithField("topic", p.Topic).Warn("topic configs from the catalog refused; keeping the partition's")
			continue
		}
		if s == p.CurrentSettings() {
			continue
		}
		c := s.PartitionConfig(h.cfg.Topic, h.cfg.Files, compression.Codecs{})
		if old := p.Replica.Config(); old.Flush != c.Flush && topics.IsInternal(p.Topic) {
			c.Flush = old.Flush // the group coordinator's commits are fsynced whatever the default
		}
		p.Replica.SetConfig(c)
		p.LiveSettings.Store(&s)
	}
}

// EnforceRetention enforces retention on every open partition and expires
// producer state idle since before cutoff.
func (h *Host) EnforceRetention(cutoff time.Time) {
	for _, p := range h.All() {
		deleted, err := p.Replica.EnforceRetention()
		fields := logrus.Fields{"topic": p.Topic, "partition": p.Index}
		if err != nil && !errors.Is(err, partition.ErrClosed) {
			h.cfg.Log.WithError(err).WithFields(fields).Warn("retention")
		}
		if deleted > 0 {
			h.cfg.Log.WithFields(fields).WithField("segments", deleted).Info("retention deleted segments")
		}
		p.ExpireProducers(cutoff)
	}
}

// FlushTxnIndexes writes the due txn-index checkpoints of the open
// partitions (every TxnCheckpointInterval).
func (h *Host) FlushTxnIndexes() {
	for _, p := range h.All() {
		p.Txns.FlushCheckpoint(p.Dir)
	}
}

// Led counts the open partitions this node leads: its replicas that lead
// (with Raft, not the preferred order's guess).
func (h *Host) Led() int {
	led := 0
	for _, p := range h.All() {
		if p.Replica.IsLeader() {
			led++
		}
	}
	return led
}

// CountFetched adds each partition's bytes in a fetch answer to its
// fetched counter (for the console's sampler); names are the request's
// topics by index, as the answer keeps them.
func (h *Host) CountFetched(resp *wire.FetchResponse, names []string) {
	for ti, ft := range resp.Topics {
		if ti >= len(names) {
			return
		}
		for _, fp := range ft.Partitions {
			if fp.Records == nil {
				continue
			}
			if size := fp.Records.Size(); size > 0 {
				if p := h.Get(names[ti], fp.Partition); p != nil {
					p.FetchedBytes.Add(size)
				}
			}
		}
	}
}

// ScrubTargets are the open partitions, for the scrubber.
func (h *Host) ScrubTargets() []scrub.Target {
	parts := h.All()
	out := make([]scrub.Target, len(parts))
	for i, p := range parts {
		out[i] = scrub.Target{Topic: p.Topic, Partition: p.Index, Log: p.Replica}
	}
	return out
}

// Counters is where FlushProduced emits (go-metrics, through node/admin).
type Counters interface {
	IncrCounterWithLabels(key []string, val float32, labels []metrics.Label)
}

// FlushProduced emits each open partition's produced bytes and records
// since the last flush (spool_produce_bytes, spool_produce_records, by
// topic); one flush runs at a time.
func (h *Host) FlushProduced(m Counters) {
	for _, p := range h.All() {
		bytes, records := p.ProducedBytes.Load(), p.ProducedRecords.Load()
		db, dr := bytes-p.FlushedBytes, records-p.FlushedRecords
		if db == 0 && dr == 0 {
			continue
		}
		p.FlushedBytes, p.FlushedRecords = bytes, records
		labels := []metrics.Label{{Name: "topic", Value: p.Topic}}
		m.IncrCounterWithLabels([]string{"produce", "bytes"}, float32(db), labels)
		m.IncrCounterWithLabels([]string{"produce", "records"}, float32(dr), labels)
	}
}

// Health is nil unless a replica stopped on a write error and has not come
// back yet, or a partition failed to open again after one (mend.go): what
// /readyz says of the hosted partitions.
func (h *Host) Health() error {
	if c := h.Stopped(); c > 0 {
		return fmt.Errorf("%d replicas stopped on a write error (a full disk?); each is reopened from disk every %v until it stays up", c, MendInterval)
	}
	if h.Missing() {
		return errors.New("a partition of this node failed to open again after a write error; retried every " + MendInterval.String())
	}
	return nil
}
