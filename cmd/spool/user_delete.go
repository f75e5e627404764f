package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newUserDeleteCmd deletes a cluster user: every credential it has, or
// only those of the mechanisms named.
func newUserDeleteCmd(g *globals) *cobra.Command {
	var mechanisms []string
	cmd := &cobra.Command{
		Use:   "delete USER",
		Short: "Delete a SCRAM user from the cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			deleted, err := g.DeleteUser(cmd.Context(), args[0], mechanisms)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "user %s: deleted %s\n", args[0], strings.Join(deleted, ", "))
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&mechanisms, "mechanism", nil, "delete only these mechanisms' credentials (default: all)")
	return cmd
}
