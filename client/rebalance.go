package client

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// PlannedMove is one partition whose replicas are not where rendezvous
// hashing over today's roster would put them: the move that puts them
// there, the replicas it copies and the bytes (the partition's largest
// replica, as DescribeLogDirs reports it; -1 when unknown).
type PlannedMove struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	From      []int32 `json:"from"`
	To        []int32 `json:"to"`
	Copies    int     `json:"copies"`
	Bytes     int64   `json:"bytes"`
}

// RebalancePlan is the moves a rebalance would make, the biggest first.
type RebalancePlan []PlannedMove

// WriteTable prints the plan, then its totals.
func (p RebalancePlan) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tFROM\tTO\tCOPIES\tBYTES")
	copies, bytes := 0, int64(0)
	for _, m := range p {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%d\n", m.Topic, m.Partition, idList(m.From), idList(m.To), m.Copies, m.Bytes)
		copies += m.Copies
		bytes += max(m.Bytes, 0) * int64(m.Copies)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d partitions to move, %d replicas to copy, %d bytes\n", len(p), copies, bytes)
	return err
}

// PlanRebalance lists the moves that would put every partition of topic
// (or of every topic) where placement over today's roster prefers it:
// brokers joined or were decommissioned since it was placed. Single-copy
// partitions are left out (they cannot move), and so are even-factor ones
// (the cluster refuses to move them) and partitions moving already.
func (g Config) PlanRebalance(ctx context.Context, topic string) (RebalancePlan, error) {
	parts, err := g.Placement(ctx, topic)
	if err != nil {
		return nil, err
	}
	moving, err := g.PartitionMoves(ctx)
	if err != nil {
		return nil, err
	}
	sizes, err := g.partitionSizes(ctx)
	if err != nil {
		return nil, err
	}
	plan := RebalancePlan{}
	for _, p := range parts {
		if !p.Differs || len(p.Replicas) < 2 || len(p.Preferred) != len(p.Replicas) {
			continue
		}
		if len(p.Replicas)%2 == 0 {
			// An even factor: the cluster refuses to move it (a Raft group
			// of 2 survives no failure; it is served where it is).
			continue
		}
		if slices.ContainsFunc(moving, func(m PartitionMove) bool { return m.Topic == p.Topic && m.Partition == p.Partition }) {
			continue
		}
		m := PlannedMove{Topic: p.Topic, Partition: p.Partition, From: p.Replicas, To: p.Preferred, Bytes: -1}
		for _, b := range p.Preferred {
			if !slices.Contains(p.Replicas, b) {
				m.Copies++
			}
		}
		if s, ok := sizes[topicPartition{p.Topic, p.Partition}]; ok {
			m.Bytes = s
		}
		plan = append(plan, m)
	}
	slices.SortStableFunc(plan, func(a, b PlannedMove) int {
		if a.Bytes != b.Bytes {
			return int(b.Bytes - a.Bytes) // the busiest first
		}
		return 0
	})
	return plan, nil
}

type topicPartition struct {
	topic string
	part  int32
}

// partitionSizes is each partition's largest replica in bytes, from every
// broker's DescribeLogDirs.
func (g Config) partitionSizes(ctx context.Context) (map[topicPartition]int64, error) {
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil && !isShardErrors(err) {
		return nil, fmt.Errorf("describe log dirs: %w", err)
	}
	out := map[topicPartition]int64{}
	for _, dirs := range all {
		for _, d := range dirs {
			for t, ps := range d.Topics {
				for p, s := range ps {
					k := topicPartition{t, p}
					out[k] = max(out[k], s.Size)
				}
			}
		}
	}
	return out, nil
}

// ApplyRebalance starts the plan's moves, at most limit of them counting
// those under way (0: no bound), the biggest first, and returns those
// started.
func (g Config) ApplyRebalance(ctx context.Context, plan RebalancePlan, limit int) (RebalancePlan, error) {
	moving, err := g.PartitionMoves(ctx)
	if err != nil {
		return nil, err
	}
	started := RebalancePlan{}
	for _, m := range plan {
		if limit > 0 && len(moving)+len(started) >= limit {
			break
		}
		if err := g.MovePartition(ctx, m.Topic, m.Partition, m.To); err != nil {
			return started, err
		}
		started = append(started, m)
	}
	return started, nil
}
