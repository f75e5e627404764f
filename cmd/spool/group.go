package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func newGroupCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "List and describe consumer groups, reset their offsets",
	}
	cmd.AddCommand(newGroupListCmd(g), newGroupDescribeCmd(g), newGroupResetOffsetsCmd(g))
	return cmd
}

func newGroupDescribeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "describe GROUP...",
		Short: "Show a group's members, assignments, committed offsets and lag per partition",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			adm, done, err := g.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			lags, err := adm.Lag(cmd.Context(), args...)
			if err != nil {
				return fmt.Errorf("describe groups: %w", err)
			}
			for i, name := range args {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				l, ok := lags[name]
				if !ok {
					return fmt.Errorf("group %s: no answer from its coordinator", name)
				}
				if err := l.Error(); err != nil {
					return fmt.Errorf("group %s: %w", name, err)
				}
				printGroupLag(cmd.OutOrStdout(), l)
			}
			return nil
		},
	}
}

func printGroupLag(out io.Writer, l kadm.DescribedGroupLag) {
	fmt.Fprintf(out, "group %s  state %s  protocol %s/%s  coordinator %d  members %d  total lag %d\n",
		l.Group, l.State, l.ProtocolType, l.Protocol, l.Coordinator.NodeID, len(l.Members), l.Lag.Total())
	if len(l.Members) > 0 {
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MEMBER\tINSTANCE\tCLIENT-ID\tHOST\tASSIGNMENT")
		for _, m := range l.Members {
			instance := "-"
			if m.InstanceID != nil {
				instance = *m.InstanceID
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", m.MemberID, instance, m.ClientID, m.ClientHost, formatAssignment(m))
		}
		w.Flush()
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tCOMMITTED\tLOG-END\tLAG\tMEMBER")
	for _, pl := range l.Lag.Sorted() {
		committed, lag := "-", "-"
		if pl.Commit.At >= 0 {
			committed = fmt.Sprint(pl.Commit.At)
		}
		if pl.Lag >= 0 {
			lag = fmt.Sprint(pl.Lag)
		}
		member := "-"
		if pl.Member != nil {
			member = pl.Member.MemberID
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\t%s\n", pl.Topic, pl.Partition, committed, pl.End.Offset, lag, member)
	}
	w.Flush()
}

func formatAssignment(m kadm.DescribedGroupMember) string {
	a, ok := m.Assigned.AsConsumer()
	if !ok {
		return "-"
	}
	var parts []string
	for _, t := range a.Topics {
		ps := slices.Clone(t.Partitions)
		slices.Sort(ps)
		parts = append(parts, fmt.Sprintf("%s%v", t.Topic, ps))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func newGroupResetOffsetsCmd(g *globals) *cobra.Command {
	var (
		topic      string
		partitions []int32
		toEarliest bool
		toLatest   bool
		toOffset   int64
		dryRun     bool
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic T (--to-earliest | --to-latest | --to-offset N)",
		Short: "Set a group's committed offsets for a topic; the group must have no active members",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group := args[0]
			chosen := 0
			for _, b := range []bool{toEarliest, toLatest, cmd.Flags().Changed("to-offset")} {
				if b {
					chosen++
				}
			}
			if chosen != 1 {
				return errors.New("give exactly one of --to-earliest, --to-latest, --to-offset")
			}
			if topic == "" {
				return errors.New("--topic is required")
			}
			ctx := cmd.Context()
			adm, done, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer done()

			starts, err := adm.ListStartOffsets(ctx, topic)
			if err != nil {
				return fmt.Errorf("list start offsets of %s: %w", topic, err)
			}
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				return fmt.Errorf("list end offsets of %s: %w", topic, err)
			}
			if err := ends.Error(); err != nil {
				return fmt.Errorf("topic %s: %w", topic, err)
			}
			var target kadm.Offsets
			var missing []int32
			for _, p := range partitions {
				if _, ok := ends.Lookup(topic, p); !ok {
					missing = append(missing, p)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("topic %s has no partitions %v", topic, missing)
			}
			ends.Each(func(e kadm.ListedOffset) {
				if len(partitions) > 0 && !slices.Contains(partitions, e.Partition) {
					return
				}
				s, _ := starts.Lookup(topic, e.Partition)
				var at int64
				switch {
				case toEarliest:
					at = s.Offset
				case toLatest:
					at = e.Offset
				default: // clamped to the partition's range, as kafka-consumer-groups does
					at = min(max(toOffset, s.Offset), e.Offset)
				}
				target.Add(kadm.Offset{Topic: topic, Partition: e.Partition, At: at, LeaderEpoch: -1})
			})
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TOPIC\tPARTITION\tNEW-OFFSET")
			for _, o := range target.Sorted() {
				fmt.Fprintf(w, "%s\t%d\t%d\n", o.Topic, o.Partition, o.At)
			}
			if dryRun {
				fmt.Fprintln(w, "(dry run: nothing committed)")
				return w.Flush()
			}
			resps, err := adm.CommitOffsets(ctx, group, target)
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
	cmd.Flags().BoolVar(&toEarliest, "to-earliest", false, "reset to each partition's log start")
	cmd.Flags().BoolVar(&toLatest, "to-latest", false, "reset to each partition's log end")
	cmd.Flags().Int64Var(&toOffset, "to-offset", 0, "reset to this offset, clamped to each partition's range")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the new offsets without committing them")
	return cmd
}
