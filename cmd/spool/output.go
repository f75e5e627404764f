package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// addOutputFlag adds the -o of the listing commands.
func addOutputFlag(cmd *cobra.Command, output *string) {
	cmd.Flags().StringVarP(output, "output", "o", "table", "output format: table or json")
}

// table is a result that prints itself as a table; as JSON it is itself.
type table interface{ WriteTable(io.Writer) error }

// printListing prints t as one JSON document with -o json, else as a table.
func printListing(cmd *cobra.Command, output string, t table) error {
	if output == "json" {
		return client.WriteJSON(cmd.OutOrStdout(), t)
	}
	return t.WriteTable(cmd.OutOrStdout())
}

// pick is yes when cond holds, else no.
func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}
