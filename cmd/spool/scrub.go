package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newScrubCmd(g *globals) *cobra.Command {
	var start bool
	cmd := &cobra.Command{
		Use:   "scrub",
		Short: "Show what the node's CRC scrub and crash recovery found damaged",
		Long: `Show the background scrub of the node at --admin: its rate and passes, every
record batch it found damaged that is still in a log (fetches starting at one
get KAFKA_STORAGE_ERROR; everything before it is still served), and what crash
recovery cut from logs into DATA/quarantine since the node started, and the
damaged replicas of replicated partitions rebuilt from their peers (or
waiting, their damage fenced, until the rest of the group holds everything
committed), kept across restarts with the findings.
--start asks for a pass now instead of at the next --scrub-interval.
See README.md, "Corrupt segments", for what to do about a finding.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.Scrub(cmd.Context(), start)
			if err != nil {
				return err
			}
			if start {
				fmt.Fprintln(cmd.OutOrStdout(), "scrub pass requested")
			}
			client.WriteScrubStatus(cmd.OutOrStdout(), st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&start, "start", false, "start a scrub pass now")
	return cmd
}
