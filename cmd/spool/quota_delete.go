package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newQuotaDeleteCmd removes quotas of one entity: every key it has, or
// those named.
func newQuotaDeleteCmd(g *globals) *cobra.Command {
	var ent quotaEntityFlags
	var keys []string
	cmd := &cobra.Command{
		Use:   "delete",
		Short: "Delete the quotas of a user, client id or ip",
		Example: `  spool quota delete --user alice
  spool quota delete --user alice --client-id app --delete-config producer_byte_rate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := ent.mustEntity()
			if err != nil {
				return err
			}
			deleted, err := g.DeleteQuotas(cmd.Context(), e, keys)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: removed %s\n", e, strings.Join(deleted, ","))
			return nil
		},
	}
	ent.register(cmd.Flags())
	cmd.Flags().StringSliceVar(&keys, "delete-config", nil, "only these quota keys (default: every key the entity has)")
	return cmd
}
