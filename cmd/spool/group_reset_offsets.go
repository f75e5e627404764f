package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newGroupResetOffsetsCmd(g *globals) *cobra.Command {
	var (
		topic      string
		partitions []int32
		to         string
		toEarliest bool
		toLatest   bool
		toOffset   int64
		dryRun     bool
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic T --to POSITION",
		Short: "Set a group's committed offsets for a topic; the group must have no active members",
		Long: `Set a group's committed offsets for a topic; the group must have no active
members. --to takes what consume --from does: ` + fromVocabulary + `.
--to-earliest, --to-latest and --to-offset N are the same as --to earliest,
--to latest and --to N.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeGroups(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			var given []string
			if to != "" {
				given = append(given, to)
			}
			if toEarliest {
				given = append(given, "earliest")
			}
			if toLatest {
				given = append(given, "latest")
			}
			if cmd.Flags().Changed("to-offset") {
				given = append(given, strconv.FormatInt(toOffset, 10))
			}
			if len(given) != 1 {
				return errors.New("give exactly one of --to, --to-earliest, --to-latest, --to-offset")
			}
			pos, err := parsePosition(given[0], time.Now())
			if err != nil {
				return fmt.Errorf("--to %w", err)
			}
			if topic == "" {
				return errors.New("--topic is required")
			}
			ctx := cmd.Context()
			cl, err := g.client(ctx)
			if err != nil {
				return err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			lctx, cancel := context.WithTimeout(ctx, g.timeout)
			defer cancel()
			_, live, down, err := topicPartitions(lctx, adm, topic, partitions)
			if err != nil {
				return err
			}
			ranges := partitionRanges(lctx, cl, topic, live, pos, down)
			if len(down) > 0 {
				// Half a reset is worse than none: a group resumes from a
				// mix of old and new positions.
				return fmt.Errorf("nothing committed: %s", describeDown(topic, down))
			}
			var target kadm.Offsets
			for p, r := range ranges {
				target.Add(kadm.Offset{Topic: topic, Partition: p, At: pos.resolve(r.start, r.end, r.byTime), LeaderEpoch: -1})
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOPIC\tPARTITION\tNEW-OFFSET")
			for _, o := range target.Sorted() {
				fmt.Fprintf(w, "%s\t%d\t%d\n", o.Topic, o.Partition, o.At)
			}
			if dryRun {
				fmt.Fprintln(w, "(dry run: nothing committed)")
				return w.Flush()
			}
			resps, err := adm.CommitOffsets(lctx, group, target)
			if err != nil {
				return fmt.Errorf("commit offsets of %s: %w", group, err)
			}
			if err := resps.Error(); err != nil {
				if errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.IllegalGeneration) || errors.Is(err, kerr.RebalanceInProgress) {
					return fmt.Errorf("group %s has active members; stop its consumers before resetting offsets (%w)", group, err)
				}
				return fmt.Errorf("commit offsets of %s: %w", group, err)
			}
			return w.Flush()
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "topic whose offsets to reset")
	cmd.Flags().Int32SliceVar(&partitions, "partitions", nil, "only these partitions (default: all)")
	cmd.Flags().StringVar(&to, "to", "", "the new position: "+fromVocabulary)
	cmd.Flags().BoolVar(&toEarliest, "to-earliest", false, "same as --to earliest")
	cmd.Flags().BoolVar(&toLatest, "to-latest", false, "same as --to latest")
	cmd.Flags().Int64Var(&toOffset, "to-offset", 0, "same as --to N: this offset, clamped to each partition's range")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the new offsets without committing them")
	cmd.RegisterFlagCompletionFunc("topic", completeTopics(g))
	return cmd
}
