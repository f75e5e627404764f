package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

func newTxnCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "txn",
		Short: "List and describe transactions (transactional ids at their coordinators)",
	}
	cmd.AddCommand(newTxnListCmd(g), newTxnDescribeCmd(g))
	return cmd
}

func newTxnListCmd(g *globals) *cobra.Command {
	var output string
	var states []string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List transactional ids with their state, producer id and coordinator",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			l, err := g.ListTxns(cmd.Context(), states)
			if perr := printListing(cmd, output, l); perr != nil {
				return perr
			}
			return err
		},
	}
	cmd.Flags().StringSliceVar(&states, "state", nil, "only transactions in these states (Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort)")
	addOutputFlag(cmd, &output)
	return cmd
}

func newTxnDescribeCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "describe TRANSACTIONAL-ID...",
		Short: "Show a transactional id's state, producer id and epoch, timeout, start and partitions",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			d, err := g.DescribeTxns(cmd.Context(), args)
			if perr := printListing(cmd, output, d); perr != nil {
				return perr
			}
			return err
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
