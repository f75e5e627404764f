package node

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/wire"
)

// ElectLeaders: v0-2
//
// Behavior:
// * PREFERRED (0): the preferred replica (the first of the partition's
//   list, or of a move's target) is to lead. Already leading:
//   ELECTION_NOT_NEEDED. Not alive or not a replica of a Raft group
//   (single copy, which the first live replica leads anyway):
//   PREFERRED_LEADER_NOT_AVAILABLE. Otherwise, where this node hosts a
//   replica, it asks the group to transfer leadership (raft forwards a
//   follower's request to the leader); elsewhere the leader hands
//   leadership back by itself (it does so whenever the preferred replica
//   is alive and caught up). The answer waits, up to TimeoutMillis (at
//   most 30s), for the preferred replica to lead: NONE, or
//   PREFERRED_LEADER_NOT_AVAILABLE when it did not in time.
// * UNCLEAN (1): Raft elects only with a majority of the replicas, whose
//   logs hold every acknowledged record: a partition with a leader is
//   ELECTION_NOT_NEEDED; one without is ELIGIBLE_LEADERS_NOT_AVAILABLE,
//   since electing a replica outside a majority could lose acknowledged
//   records, which Spool never does.
// * Null Topics means every partition; an unknown topic or partition is
//   UNKNOWN_TOPIC_OR_PARTITION; another election type INVALID_REQUEST.
//
// Version notes:
// * v1: ElectionType, top-level ErrorCode
// * v2: flexible

const maxElectWait = 30 * time.Second

func (n *Node) handleElectLeaders(ctx context.Context, wreq *wire.Request) wire.Response {
	req := wreq.Body.(*kmsg.ElectLeadersRequest)
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	if !n.access.Requester(ctx, wreq).MayCluster(kmsg.ACLOperationAlter) {
		// As Kafka: ALTER on the cluster; v1+ says so once, v0 per partition.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		for _, rt := range req.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = rt.Topic
			for _, p := range rt.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, kerr.ClusterAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	// waiting: resp.Topics[ti].Partitions[pi], set once every slice is
	// final.
	type waiting struct {
		ti, pi int
		spec   TopicSpec
	}
	var wait []waiting
	topics := req.Topics
	if topics == nil {
		for _, spec := range n.catalog.Topics() {
			t := kmsg.NewElectLeadersRequestTopic()
			t.Topic = spec.Name
			for p := range spec.Partitions {
				t.Partitions = append(t.Partitions, p)
			}
			topics = append(topics, t)
		}
	}
	for _, rt := range topics {
		st := kmsg.NewElectLeadersResponseTopic()
		st.Topic = rt.Topic
		spec, known := n.catalog.Topic(rt.Topic)
		if membership.ValidateTopicName(rt.Topic) != nil {
			known = false
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewElectLeadersResponseTopicPartition()
			sp.Partition = p
			var code *kerr.Error
			var msg string
			switch {
			case !known || p < 0 || p >= spec.Partitions:
				code, msg = kerr.UnknownTopicOrPartition, "unknown topic or partition"
			case req.ElectionType == 1:
				code, msg = electUnclean(n.leaders.LeaderOf(spec, p))
			case req.ElectionType != 0:
				code, msg = kerr.InvalidRequest, fmt.Sprintf("election type %d", req.ElectionType)
			default:
				var started bool
				code, msg, started = electPreferred(spec.Preferred(p), n.leaders.LeaderOf(spec, p), n.agent.IsAlive, n.parts.Current(spec.Name, p, spec.ID))
				if started {
					wait = append(wait, waiting{len(resp.Topics), len(st.Partitions), spec})
					st.Partitions = append(st.Partitions, sp)
					continue
				}
			}
			if code != nil {
				sp.ErrorCode, sp.ErrorMessage = code.Code, &msg
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	if timeout <= 0 || timeout > maxElectWait {
		timeout = maxElectWait
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(wait) > 0 {
		rest := wait[:0]
		for _, w := range wait {
			p := resp.Topics[w.ti].Partitions[w.pi].Partition
			if n.leaders.LeaderOf(w.spec, p) != w.spec.Preferred(p)[0] {
				rest = append(rest, w)
			}
		}
		wait = rest
		if len(wait) == 0 {
			break
		}
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		case <-n.closing:
		}
		break
	}
	for _, w := range wait {
		msg := "the preferred replica did not take leadership in time"
		sp := &resp.Topics[w.ti].Partitions[w.pi]
		sp.ErrorCode, sp.ErrorMessage = kerr.PreferredLeaderNotAvailable.Code, &msg
	}
	return resp
}

// electPreferred starts a preferred election of a partition (pref: its
// replicas in succession order, leader: who leads it now, h: its replica
// here, if any), or says why none is needed or possible.
func electPreferred(pref []int32, leader int32, alive func(int32) bool, h *localPartition) (*kerr.Error, string, bool) {
	if leader == pref[0] {
		return kerr.ElectionNotNeeded, "the preferred replica leads", false
	}
	if len(pref) < 2 {
		return kerr.PreferredLeaderNotAvailable, "a single copy has no election: its first live replica leads", false
	}
	if !alive(pref[0]) {
		return kerr.PreferredLeaderNotAvailable, fmt.Sprintf("preferred replica %d is not alive", pref[0]), false
	}
	if h != nil {
		h.Replica.TransferLeadership(pref[0])
	}
	return nil, "", true
}

// electUnclean says why a partition led by leader (-1: none) gets no
// unclean election.
func electUnclean(leader int32) (*kerr.Error, string) {
	if leader >= 0 {
		return kerr.ElectionNotNeeded, "the partition has a leader"
	}
	return kerr.EligibleLeadersNotAvailable, "Raft elects only with a majority of the replicas; an unclean election could lose acknowledged records"
}
