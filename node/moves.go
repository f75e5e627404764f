package node

import (
	"context"

	"github.com/spool-log/spool/membership"
	"github.com/spool-log/spool/node/admin"
	"github.com/spool-log/spool/node/moves"
	"github.com/spool-log/spool/node/topics"
)

// newMover is the node's carrying out of moves (node/moves: reassignments,
// drains, rebalancing, their status and metrics), over its membership
// agent, catalog, hosted partitions and leader table. Made once the agent
// exists (startMembership), before the first reconcile asks StillVoting.
func (n *Node) newMover() *moves.Mover {
	return moves.New(moves.Config{
		Self:    n.cfg.NodeID,
		Cluster: n.agent,
		Alter: func(topic string, change func(*membership.TopicEntry) error) error {
			_, err := n.catalog.Alter(topic, change)
			return err
		},
		Hosted: func(topic string, index int32, id membership.TopicID) (moves.Hosted, bool) {
			if p := n.hostedPartition(topic, index, id); p != nil {
				return movesHosted(p), true
			}
			return moves.Hosted{}, false
		},
		AllHosted: func() []moves.Hosted {
			ps := n.localPartitions()
			out := make([]moves.Hosted, len(ps))
			for i, p := range ps {
				out[i] = movesHosted(p)
			}
			return out
		},
		Claim: func(id membership.TopicID, index int32) (moves.Claim, bool) {
			c, ok := n.leaders.Lookup(id, index)
			return moves.Claim{Leader: c.Leader, Voters: c.Voters, ISR: c.ISR}, ok
		},
		LeaderOf: func(e membership.TopicEntry, index int32) int32 {
			return n.leaders.LeaderOf(topics.FromEntry(e), index)
		},
		GetJSON:           n.peers.GetJSON,
		AutoRebalance:     n.cfg.AutoRebalance,
		FailedBrokerGrace: n.cfg.FailedBrokerGrace,
		MaxMoves:          n.cfg.RebalanceMaxMoves,
		Metrics:           n.metrics,
		Log:               n.log,
	})
}

func movesHosted(p *localPartition) moves.Hosted {
	return moves.Hosted{Topic: p.Topic, Index: p.Index, ID: p.TopicID, Replica: p.Replica}
}

// stillVoting tells whether p's group still counts this replica
// (moves.Mover.StillVoting). Called by reconcile (partitionVerdict), under
// the partition set's plan lock.
func (n *Node) stillVoting(p *localPartition) bool {
	return n.mover.StillVoting(movesHosted(p))
}

func (v adminView) RebalanceStatus(ctx context.Context, local bool) admin.RebalanceStatus {
	return v.n.mover.Status(ctx, local)
}

func (v adminView) SetRebalancePaused(paused bool) error { return v.n.agent.SetRebalancePaused(paused) }
