package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newMembersCmd(g *globals) *cobra.Command {
	var output string
	var watch bool
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's members as one node's gossip sees them",
		Long: `List the cluster's members as the --admin node sees them: name, broker id,
status (alive, joining, failed or left: joining is alive in gossip but not yet
serving Kafka requests, or seeing fewer alive brokers than the --admin node, so
that a node shown alive lists in its Metadata as many brokers as are shown
alive), Kafka and gossip addresses, rack and how many partitions each leads. With --watch, print the members first, then stream join,
fail, leave, update and reap events as they happen, one line each (an update
says what changed), until interrupted; when the watched node goes away, the
watch moves to another live member.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			if watch {
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				return g.WatchMembers(ctx, client.PrintWatch(cmd.OutOrStdout(), cmd.ErrOrStderr(), output == "json"))
			}
			members, err := g.Members(cmd.Context())
			if err != nil {
				return err
			}
			return printListing(cmd, output, members)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json (one JSON object per line with --watch)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "stream membership events until interrupted")
	return cmd
}
