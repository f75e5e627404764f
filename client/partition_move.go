package client

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// MovePartition asks the cluster to move a partition's replicas to target
// (AlterPartitionReassignments); a nil target cancels the partition's move.
// The answer means the move is recorded; the partition's leader carries it
// out (WaitMoved).
func (g Config) MovePartition(ctx context.Context, topic string, part int32, target []int32) error {
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return err
	}
	defer done()
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign(topic, part, target)
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("move %s/%d: %w", topic, part, err)
	}
	r, ok := resps[topic][part]
	if !ok {
		return fmt.Errorf("move %s/%d: no answer for the partition", topic, part)
	}
	if r.Err != nil {
		return fmt.Errorf("move %s/%d: %v%s", topic, part, r.Err, errSuffix(r.ErrMessage))
	}
	return nil
}

// PartitionMove is one move under way, as ListPartitionReassignments
// reports it.
type PartitionMove struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
	Adding    []int32 `json:"adding"`
	Removing  []int32 `json:"removing"`
}

// PartitionMoves are moves under way, by topic and partition.
type PartitionMoves []PartitionMove

// WriteTable prints the moves, one a line.
func (ms PartitionMoves) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tREPLICAS\tADDING\tREMOVING")
	for _, m := range ms {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", m.Topic, m.Partition, idList(m.Replicas), idList(m.Adding), idList(m.Removing))
	}
	return w.Flush()
}

// PartitionMoves lists the moves under way (of topics, or of every topic).
func (g Config) PartitionMoves(ctx context.Context, topics ...string) (PartitionMoves, error) {
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	set := kadm.TopicsSet{}
	if len(topics) == 0 {
		ts, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		for _, t := range ts {
			for p := range t.Partitions {
				set.Add(t.Topic, p)
			}
		}
	} else {
		ts, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("list topics: %w", err)
		}
		for _, t := range ts {
			for p := range t.Partitions {
				set.Add(t.Topic, p)
			}
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	ls, err := adm.ListPartitionReassignments(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("list partition reassignments: %w", err)
	}
	out := PartitionMoves{}
	ls.Each(func(r kadm.ListPartitionReassignmentsResponse) {
		out = append(out, PartitionMove{Topic: r.Topic, Partition: r.Partition, Replicas: r.Replicas, Adding: r.AddingReplicas, Removing: r.RemovingReplicas})
	})
	slices.SortFunc(out, func(a, b PartitionMove) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out, nil
}

// WaitMoved waits until topic/part is no longer moving and its replica
// list, as Metadata reports it, is target, or ctx ends; then it says where
// the move stood when last seen, and the last error.
func (g Config) WaitMoved(ctx context.Context, topic string, part int32, target []int32) error {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	stood, lastErr := "not seen", error(nil)
	for {
		moves, err := g.PartitionMoves(ctx, topic)
		if err == nil {
			i := slices.IndexFunc(moves, func(m PartitionMove) bool { return m.Partition == part })
			if i >= 0 {
				m := moves[i]
				stood = fmt.Sprintf("moving: replicas %v, adding %v, removing %v", m.Replicas, m.Adding, m.Removing)
			} else {
				var replicas []int32
				if replicas, err = g.partitionReplicas(ctx, topic, part); err == nil {
					if slices.Equal(replicas, target) {
						return nil
					}
					stood = fmt.Sprintf("no move listed, replicas %v", replicas)
				}
			}
		}
		if err != nil && ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				stood += fmt.Sprintf(" (last error: %v)", lastErr)
			}
			return fmt.Errorf("wait for the move of %s/%d to %v: %w; last seen %s; the move goes on: `spool partition moves` shows it", topic, part, target, ctx.Err(), stood)
		case <-t.C:
		}
	}
}

func (g Config) partitionReplicas(ctx context.Context, topic string, part int32) ([]int32, error) {
	adm, done, err := g.Admin(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	ts, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, err
	}
	p, ok := ts[topic].Partitions[part]
	if !ok {
		return nil, fmt.Errorf("no partition %s/%d", topic, part)
	}
	return p.Replicas, nil
}
