package main

import "github.com/spf13/cobra"

func newQuarantineCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List or reclaim the data a node set aside instead of deleting it",
		Long: `A node never deletes partition data outright: the directories of a deleted
topic, a directory left by a deleted incarnation of a topic, and bytes cut
from a damaged segment are moved to DATA/quarantine, each with an ERROR log
line naming it. The node reclaims them after --quarantine-retention (7 days by
default); these commands list them and reclaim them sooner, on the --admin node.`,
	}
	cmd.AddCommand(newQuarantineListCmd(g), newQuarantinePurgeCmd(g)) // quarantine_NAME.go
	return cmd
}
