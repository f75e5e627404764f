package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/spool-log/spool/client"
)

// newQuotaSetCmd sets (and with --delete-config removes) quotas of one
// entity, like kafka-configs.sh --alter.
func newQuotaSetCmd(g *globals) *cobra.Command {
	var ent quotaEntityFlags
	var add, del []string
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Set (or remove) quotas of a user, client id or ip",
		Example: `  spool quota set --user alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  spool quota set --user alice --client-id app --add-config producer_byte_rate=524288
  spool quota set --client-id-default --add-config consumer_byte_rate=10485760
  spool quota set --ip 10.1.2.3 --add-config connection_creation_rate=20
  spool quota set --user alice --delete-config consumer_byte_rate`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := ent.mustEntity()
			if err != nil {
				return err
			}
			set, err := client.ParseQuotaConfigs(add)
			if err != nil {
				return err
			}
			if err := g.AlterQuotas(cmd.Context(), e, set, del); err != nil {
				return err
			}
			if len(set) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: set %s\n", e, client.FormatQuotaValues(set))
			}
			if len(del) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: removed %s\n", e, strings.Join(del, ","))
			}
			return nil
		},
	}
	ent.register(cmd.Flags())
	cmd.Flags().StringSliceVar(&add, "add-config", nil, "quotas to set, KEY=VALUE (comma-separated or repeated): producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate, connection_creation_rate")
	cmd.Flags().StringSliceVar(&del, "delete-config", nil, "quota keys to remove (comma-separated or repeated)")
	return cmd
}
