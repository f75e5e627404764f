package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newTopicAddPartitionsCmd raises a topic's partition count. The count only
// grows; the new partitions are placed by the cluster as a create would
// place them.
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
			if err := g.AddPartitions(cmd.Context(), args[0], total, validateOnly); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %d partitions\n", args[0], pick(validateOnly, "can have", "now has"), total)
			return nil
		},
	}
	cmd.Flags().IntVar(&total, "total", 0, "the partition count the topic should have (required)")
	cmd.Flags().BoolVar(&validateOnly, "validate-only", false, "check the change on the node without making it")
	_ = cmd.MarkFlagRequired("total")
	return cmd
}
