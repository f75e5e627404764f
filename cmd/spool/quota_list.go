package main

import (
	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newQuotaListCmd lists the cluster's quotas, all or one entity's.
func newQuotaListCmd(g *globals) *cobra.Command {
	var ent quotaEntityFlags
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the cluster's client quotas",
		Long: `list prints every entity's quotas, or with entity flags only the entity made of
exactly those (--user alice lists user=alice, not user=alice,client-id=app).`,
		Example: `  spool quota list
  spool quota list --user alice
  spool quota list --user-default --client-id-default -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := client.CheckOutput(output); err != nil {
				return err
			}
			e, err := ent.entity()
			if err != nil {
				return err
			}
			qs, err := g.ListQuotas(cmd.Context(), e)
			if err != nil {
				return err
			}
			return printListing(cmd, output, qs)
		},
	}
	ent.register(cmd.Flags())
	addOutputFlag(cmd, &output)
	return cmd
}
