package main

import (
	"errors"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newGroupResetOffsetsCmd(g *globals) *cobra.Command {
	var (
		o                    client.ResetOffsetsOptions
		toEarliest, toLatest bool
		toOffset             int64
	)
	cmd := &cobra.Command{
		Use:   "reset-offsets GROUP --topic T --to POSITION",
		Short: "Set a group's committed offsets for a topic; the group must have no active members",
		Long: `Set a group's committed offsets for a topic; the group must have no active
members. --to takes what consume --from does: ` + client.FromVocabulary + `.
--to-earliest, --to-latest and --to-offset N are the same as --to earliest,
--to latest and --to N.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeGroups(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			var given []string
			for _, to := range []struct {
				set bool
				pos string
			}{{o.To != "", o.To}, {toEarliest, "earliest"}, {toLatest, "latest"}, {cmd.Flags().Changed("to-offset"), strconv.FormatInt(toOffset, 10)}} {
				if to.set {
					given = append(given, to.pos)
				}
			}
			if len(given) != 1 {
				return errors.New("give exactly one of --to, --to-earliest, --to-latest, --to-offset")
			}
			ro := o
			ro.Group, ro.To = args[0], given[0]
			reset, err := g.ResetOffsets(cmd.Context(), ro)
			if err != nil {
				return err
			}
			return reset.WriteTable(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.Topic, "topic", "", "topic whose offsets to reset")
	cmd.Flags().Int32SliceVar(&o.Partitions, "partitions", nil, "only these partitions (default: all)")
	cmd.Flags().StringVar(&o.To, "to", "", "the new position: "+client.FromVocabulary)
	cmd.Flags().BoolVar(&toEarliest, "to-earliest", false, "same as --to earliest")
	cmd.Flags().BoolVar(&toLatest, "to-latest", false, "same as --to latest")
	cmd.Flags().Int64Var(&toOffset, "to-offset", 0, "same as --to N: this offset, clamped to each partition's range")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "show the new offsets without committing them")
	cmd.RegisterFlagCompletionFunc("topic", completeTopics(g))
	return cmd
}
