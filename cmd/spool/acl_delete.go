package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newACLDeleteCmd deletes the bindings a filter selects and prints them.
// A filter that selects everything needs --all, so a forgotten flag does
// not open the whole cluster (with no ACL left, everyone is allowed).
func newACLDeleteCmd(g *globals) *cobra.Command {
	var f aclFilterFlags
	var all bool
	var output string
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete the cluster's ACLs that the flags select",
		Example: `  spool acl delete --principal User:alice --topic orders
  spool acl delete --topic app- --pattern prefixed --permission deny
  spool acl delete --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			filter, narrowed, err := f.filter()
			if err != nil {
				return err
			}
			if !narrowed && !all {
				return errors.New("this would delete every ACL: narrow it (--topic, --principal, ...) or give --all")
			}
			deleted, err := g.DeleteACLs(cmd.Context(), filter)
			if err != nil {
				return err
			}
			return printListing(cmd, output, deleted)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&all, "all", false, "delete every ACL")
	addOutputFlag(cmd, &output)
	return cmd
}
