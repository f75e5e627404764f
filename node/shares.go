package node

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/node/share"
	"github.com/spool-log/spool/node/topics"
	"github.com/spool-log/spool/partition"
)

// Share groups (KIP-932, node/share): the wiring. The coordinator half
// answers on the node that coordinates the group id (as consumer groups);
// the share-partition half on each partition's leader. Both are made on
// first use.

type shareNode struct {
	once  sync.Once
	coord *share.Coordinator
	parts *share.Partitions
	// flushed are the share counters as of the last flushShareMetrics.
	flushed [7]int64
}

// shareMetricNames name node/share's counters, in shareCounts' order:
// spool_share_records_acquired, spool_share_records_acknowledged,
// spool_share_records_released, spool_share_records_rejected,
// spool_share_records_redelivered, spool_share_records_archived and
// spool_share_records_lock_expiries.
var shareMetricNames = [7]string{"acquired", "acknowledged", "released", "rejected", "redelivered", "archived", "lock_expiries"}

func shareCounts(st *share.Stats) [7]int64 {
	return [7]int64{st.Acquired.Load(), st.Acknowledged.Load(), st.Released.Load(), st.Rejected.Load(),
		st.Redelivered.Load(), st.Archived.Load(), st.LockExpiries.Load()}
}

// flushShareMetrics emits what share partitions on this node did since
// the last flush: the counters shareMetricNames names.
func (n *Node) flushShareMetrics() {
	_, parts := n.shares()
	now := shareCounts(&parts.Stats)
	for i, v := range now {
		if d := v - n.shareGroups.flushed[i]; d > 0 {
			n.metrics.IncrCounter([]string{"share", "records", shareMetricNames[i]}, float32(d))
		}
	}
	n.shareGroups.flushed = now
}

func (n *Node) shares() (*share.Coordinator, *share.Partitions) {
	s := &n.shareGroups
	s.once.Do(func() {
		cfg := share.DefaultConfig()
		s.coord = share.NewCoordinator(cfg)
		s.parts = share.NewPartitions(cfg, func(group string) share.GroupConfig {
			return n.shareGroupConfig(cfg.Defaults, group)
		}, sharePersister{n})
	})
	return s.coord, s.parts
}

// shareGroupConfig is group's configs: the defaults with the overrides
// kept in the cluster settings (set by IncrementalAlterConfigs on the
// GROUP resource, spread by gossip to every node).
func (n *Node) shareGroupConfig(defaults share.GroupConfig, group string) share.GroupConfig {
	if n.agent == nil {
		return defaults
	}
	v, ok := n.agent.Setting(share.SettingName(group))
	if !ok {
		return defaults
	}
	return share.DecodeOverrides(v).Apply(defaults)
}

// shareGroupOverrides is group's stored overrides.
func (n *Node) shareGroupOverrides(group string) share.Overrides {
	if n.agent == nil {
		return share.Overrides{}
	}
	v, _ := n.agent.Setting(share.SettingName(group))
	return share.DecodeOverrides(v)
}

// setShareGroupOverrides stores group's overrides cluster-wide.
func (n *Node) setShareGroupOverrides(group string, o share.Overrides) error {
	if n.agent == nil {
		return errors.New("cluster membership not started")
	}
	return n.agent.SetSetting(share.SettingName(group), o.Encode())
}

// shareResolve looks a share group's subscribed topics up in the catalog;
// internal topics are left out, as Kafka leaves them out of share groups.
func (n *Node) shareResolve(names []string) map[string]share.TopicInfo {
	out := make(map[string]share.TopicInfo, len(names))
	for _, name := range names {
		if topics.IsInternal(name) {
			continue
		}
		if spec, ok := n.catalog.Topic(name); ok {
			out[name] = share.TopicInfo{ID: spec.ID, Partitions: spec.Partitions}
		}
	}
	return out
}

// shareLog is a led partition's log as node/share reads it.
type shareLog struct{ p *localPartition }

func (l shareLog) Bounds(readCommitted bool) (int64, int64, error) {
	hwm, start := l.p.Replica.HighWatermark(), l.p.Replica.LogStartOffset()
	if !readCommitted {
		return start, hwm, nil
	}
	err := l.p.Txns.Refresh(l.p.Replica, l.p.Dir)
	return start, l.p.Txns.StableOffset(hwm, start), err
}

func (l shareLog) Read(from, upTo int64, maxBytes int) ([]share.Batch, error) {
	s, err := l.p.Replica.ReadUpTo(from, maxBytes, upTo)
	if errors.Is(err, partition.ErrOffsetOutOfRange) {
		return nil, nil // the SPSO is clamped to the log start next time
	}
	if err != nil {
		return nil, err
	}
	defer s.Release()
	var out []share.Batch
	_, err = s.EachBatchHeader(from, func(f *os.File, pos int64, h partition.BatchHeader) error {
		raw := make([]byte, h.Size())
		if _, err := f.ReadAt(raw, pos); err != nil {
			return fmt.Errorf("read batch at %d in %s: %w", pos, f.Name(), err)
		}
		out = append(out, share.Batch{Header: h, Raw: raw})
		return nil
	})
	return out, err
}

func (l shareLog) LeaderEpoch() int32 { return l.p.Replica.LeaderEpoch() }

func (l shareLog) Aborted(from, to int64) []share.Aborted {
	list := l.p.Txns.AbortedBetween(from, to)
	out := make([]share.Aborted, len(list))
	for i, a := range list {
		out[i] = share.Aborted{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
	}
	return out
}

// shareGroupTaken tells whether groupID names a classic or consumer
// group, which a share group may not share its id with.
func (n *Node) shareGroupTaken(groupID string) bool {
	coord, code := n.groupCoordinatorFor(groupID)
	if code != 0 {
		return false
	}
	return coord.Exists(groupID)
}

// deleteShareGroup deletes an empty share group for DeleteGroups, its
// share state first (tombstoned on every partition of the topics it
// knows), so that a group made later under the id starts afresh.
func (n *Node) deleteShareGroup(id string) kmsg.DeleteGroupsResponseGroup {
	coord, _ := n.shares()
	dg := kmsg.NewDeleteGroupsResponseGroup()
	dg.Group = id
	if members, _ := coord.Ensure(id); members > 0 {
		dg.ErrorCode = kerr.NonEmptyGroup.Code
		return dg
	}
	for _, topic := range coord.Topics(id) {
		spec, ok := n.catalog.Topic(topic)
		if !ok {
			continue
		}
		for p := range spec.Partitions {
			k := share.Key{Group: id, TopicPartition: share.TopicPartition{TopicID: spec.ID, Partition: p}}
			if code := n.shareAdminOnLeader("delete", topic, k, 0); code != 0 {
				dg.ErrorCode = code
				return dg
			}
		}
	}
	if e := coord.Delete(id); e != nil {
		dg.ErrorCode = e.Code
	}
	return dg
}

// listShareGroups are the share groups this node coordinates, for
// ListGroups (type "share", protocol type "share"), by its filters.
func (n *Node) listShareGroups(req *kmsg.ListGroupsRequest) []kmsg.ListGroupsResponseGroup {
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	if !matches(req.TypesFilter, "share") {
		return nil
	}
	coord, _ := n.shares()
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range coord.List() {
		if _, code := n.groupCoordinatorFor(g.ID); code != 0 || !matches(req.StatesFilter, g.State) {
			continue // no longer this node's to answer for
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.ID, "share", g.State, "share"
		out = append(out, lg)
	}
	return out
}
