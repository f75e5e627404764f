package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTopicDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "delete TOPIC...",
		Short:             "Delete topics and their data",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			deleted, err := g.DeleteTopics(cmd.Context(), args)
			for _, t := range deleted {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", t)
			}
			return err
		},
	}
}
