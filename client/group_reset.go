package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// ResetOffsetsOptions is whose offsets ResetOffsets sets, and to where.
type ResetOffsetsOptions struct {
	Group      string
	Topic      string
	Partitions []int32 // none: all
	To         string  // the new position, in FromVocabulary
	DryRun     bool    // resolve the offsets without committing them
}

// OffsetReset is the offsets a reset committed (or with DryRun would have).
type OffsetReset struct {
	Offsets []kadm.Offset // by topic and partition
	DryRun  bool
}

// ResetOffsets sets a group's committed offsets for a topic; the group must
// have no active members. Every partition is reset or none: a partition
// whose leader is down fails the whole reset.
func (g Config) ResetOffsets(ctx context.Context, o ResetOffsetsOptions) (OffsetReset, error) {
	res := OffsetReset{DryRun: o.DryRun}
	pos, err := ParsePosition(o.To, time.Now())
	if err != nil {
		return res, fmt.Errorf("--to %w", err)
	}
	if o.Topic == "" {
		return res, errors.New("--topic is required")
	}
	cl, err := g.Kafka(ctx)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	lctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	_, live, down, err := topicPartitions(lctx, adm, o.Topic, o.Partitions)
	if err != nil {
		return res, err
	}
	ranges := partitionRanges(lctx, cl, o.Topic, live, pos, down)
	if len(down) > 0 {
		// Half a reset is worse than none: a group resumes from a mix of
		// old and new positions.
		return res, fmt.Errorf("nothing committed: %s", describeDown(o.Topic, down))
	}
	var target kadm.Offsets
	for p, r := range ranges {
		target.Add(kadm.Offset{Topic: o.Topic, Partition: p, At: pos.Resolve(r.start, r.end, r.byTime), LeaderEpoch: -1})
	}
	res.Offsets = target.Sorted()
	if o.DryRun {
		return res, nil
	}
	resps, err := adm.CommitOffsets(lctx, o.Group, target)
	if err != nil {
		return res, fmt.Errorf("commit offsets of %s: %w", o.Group, err)
	}
	if err := resps.Error(); err != nil {
		if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
			return res, fmt.Errorf("group %s has active members; stop its consumers before resetting offsets (%w)", o.Group, err)
		}
		return res, fmt.Errorf("commit offsets of %s: %w", o.Group, err)
	}
	return res, nil
}

// WriteTable prints the new offsets as a table.
func (r OffsetReset) WriteTable(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tNEW-OFFSET")
	for _, o := range r.Offsets {
		fmt.Fprintf(w, "%s\t%d\t%d\n", o.Topic, o.Partition, o.At)
	}
	if r.DryRun {
		fmt.Fprintln(w, "(dry run: nothing committed)")
	}
	return w.Flush()
}
