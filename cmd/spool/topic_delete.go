package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newTopicDeleteCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:               "delete TOPIC...",
		Short:             "Delete topics and their data",
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeTopics(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := g.bounded(cmd.Context())
			defer cancel()
			adm, done, err := g.admin(ctx)
			if err != nil {
				return err
			}
			defer done()
			resps, err := adm.DeleteTopics(ctx, args...)
			if err != nil {
				return fmt.Errorf("delete topics: %w", err)
			}
			var failed []string
			for _, r := range resps.Sorted() {
				if r.Err != nil {
					failed = append(failed, r.Topic+": "+r.Err.Error())
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", r.Topic)
			}
			if len(failed) > 0 {
				return fmt.Errorf("%s", strings.Join(failed, "; "))
			}
			return nil
		},
	}
}
