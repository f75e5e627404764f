package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
)

// newTopicDeleteRecordsCmd moves a partition's log start offset up with
// DeleteRecords: every record before the offset is gone for consumers at
// once, and from disk when retention next runs.
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
			topic := args[0]
			if before < -1 {
				return fmt.Errorf("--before %d: want an offset, or -1 for the high watermark", before)
			}
			adm, done, err := g.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			var os kadm.Offsets
			os.Add(kadm.Offset{Topic: topic, Partition: part, At: before})
			resps, err := adm.DeleteRecords(cmd.Context(), os)
			if err != nil && !isShardErrors(err) {
				return fmt.Errorf("delete records of %s/%d: %w", topic, part, err)
			}
			r, ok := resps.Lookup(topic, part)
			switch {
			case ok && r.Err != nil:
				return fmt.Errorf("delete records of %s/%d: %w", topic, part, r.Err)
			case !ok && err != nil:
				return fmt.Errorf("delete records of %s/%d: %w", topic, part, err)
			case !ok:
				return fmt.Errorf("delete records of %s/%d: no answer for the partition", topic, part)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%d now starts at offset %d\n", topic, part, r.LowWatermark)
			return nil
		},
	}
	cmd.Flags().Int32Var(&part, "partition", 0, "the partition (required)")
	cmd.Flags().Int64Var(&before, "before", 0, "delete every record below this offset; -1 deletes up to the high watermark (required)")
	_ = cmd.MarkFlagRequired("partition")
	_ = cmd.MarkFlagRequired("before")
	return cmd
}
