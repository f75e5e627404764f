package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newACLListCmd lists the cluster's ACLs, all or those selected.
func newACLListCmd(g *globals) *cobra.Command {
	var f aclFilterFlags
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the cluster's ACLs",
		Example: `  spool acl list
  spool acl list --topic orders --pattern match
  spool acl list --principal User:alice -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			filter, _, err := f.filter()
			if err != nil {
				return err
			}
			acls, err := g.ListACLs(cmd.Context(), filter)
			if err != nil {
				return err
			}
			return printListing(cmd, output, acls)
		},
	}
	f.register(cmd.Flags())
	addOutputFlag(cmd, &output)
	return cmd
}
