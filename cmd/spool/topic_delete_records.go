package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newTopicDeleteRecordsCmd moves a partition's log start offset up: every
// record before the offset is gone for consumers at once, and from disk
// when retention next runs.
func newTopicDeleteRecordsCmd(g *globals) *cobra.Command {
	var (
		part   int32
		before int64
	)
	cmd := &cobra.Command{
		Use:   "delete-records TOPIC --partition P --before OFFSET",
		Short: "Delete a partition's records before an offset (-1: all of them)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			start, err := g.DeleteRecords(cmd.Context(), args[0], part, before)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%d now starts at offset %d\n", args[0], part, start)
			return nil
		},
	}
	cmd.Flags().Int32Var(&part, "partition", 0, "the partition (required)")
	cmd.Flags().Int64Var(&before, "before", 0, "delete every record below this offset; -1 deletes up to the high watermark (required)")
	_ = cmd.MarkFlagRequired("partition")
	_ = cmd.MarkFlagRequired("before")
	return cmd
}
