package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newTopicAddPartitionsCmd raises a topic's partition count with
// CreatePartitions. The count only grows; the new partitions are placed by
// the cluster as a create would place them.
func newTopicAddPartitionsCmd(g *globals) *cobra.Command {
	var (
		total        int
		validateOnly bool
	)
	cmd := &cobra.Command{
		Use:   "add-partitions TOPIC --total N",
		Short: "Raise a topic's partition count to N",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			topic := args[0]
			if total < 1 {
				return fmt.Errorf("--total %d: give the new partition count, above the current one", total)
			}
			adm, done, err := g.admin(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			update := adm.UpdatePartitions
			if validateOnly {
				update = adm.ValidateUpdatePartitions
			}
			resps, err := update(cmd.Context(), total, topic)
			if err != nil {
				return fmt.Errorf("add partitions to %s: %w", topic, err)
			}
			r, ok := resps[topic]
			if !ok {
				return fmt.Errorf("add partitions to %s: no answer for the topic", topic)
			}
			if r.Err != nil {
				return fmt.Errorf("add partitions to %s: %v%s", topic, r.Err, errSuffix(r.ErrMessage))
			}
			verb := "now has"
			if validateOnly {
				verb = "can have"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %d partitions\n", topic, verb, total)
			return nil
		},
	}
	cmd.Flags().IntVar(&total, "total", 0, "the partition count the topic should have (required)")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change on the node without making it")
	_ = cmd.MarkFlagRequired("total")
	return cmd
}
